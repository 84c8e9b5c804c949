package web

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"nsprof/analyze"
	"nsprof/capture"
	"nsprof/report"
)

// The API's JSON documents. Times are nanoseconds from the capture's
// start.
type (
	metaDoc struct {
		File        string         `json:"file"`
		CaptureTime string         `json:"capture_time"`
		Duration    int64          `json:"duration_ns"`
		SampleTypes []sampleType   `json:"sample_types"`
		Lost        *int64         `json:"lost_samples,omitempty"`
		Warnings    []string       `json:"warnings,omitempty"`
		Containers  []containerDoc `json:"containers"`
		Marks       int            `json:"marks"`
		Counters    int            `json:"counters"`
		Logs        int            `json:"logs"`
	}
	sampleType struct {
		analyze.ValueType
		Total int64 `json:"total"`
	}
	containerDoc struct {
		Label string `json:"label"`
		// Values are the container's totals by sample type.
		Values    []int64      `json:"values"`
		Processes []processDoc `json:"processes"`
	}
	processDoc struct {
		PID     int32  `json:"pid"`
		NSPID   int32  `json:"nspid,omitempty"`
		PPID    int32  `json:"ppid,omitempty"`
		Comm    string `json:"comm"`
		Cmdline string `json:"cmdline"`
		Start   int64  `json:"start_ns"`
		End     int64  `json:"end_ns"`
		Exited  bool   `json:"exited,omitempty"`
		Samples int    `json:"samples"`
		// Values are the process's totals by sample type.
		Values  []int64     `json:"values"`
		Threads []threadDoc `json:"threads"`
		// Programs are those a process that exec'd ran, in order (the
		// last is comm and cmdline).
		Programs []programDoc `json:"programs,omitempty"`
	}
	programDoc struct {
		Since   int64  `json:"since_ns"`
		Comm    string `json:"comm"`
		Cmdline string `json:"cmdline"`
	}
	threadDoc struct {
		TID     int32  `json:"tid"`
		Comm    string `json:"comm,omitempty"`
		Samples int    `json:"samples"`
	}
	timelineDoc struct {
		Buckets  int   `json:"buckets"`
		BucketNs int64 `json:"bucket_ns"`
		// Lanes are the sampled threads' weights by bucket; a PID's
		// lane (TID 0) sums its threads'.
		Lanes      []laneDoc    `json:"lanes"`
		Marks      []markDoc    `json:"marks"`
		MarksTotal int          `json:"marks_total"`
		Counters   []counterDoc `json:"counters"`
	}
	laneDoc struct {
		PID int32 `json:"pid"`
		TID int32 `json:"tid"`
		// At are the buckets with samples, W their weights; Peak is
		// the largest weight.
		At   []int32 `json:"at"`
		W    []int64 `json:"w"`
		Peak int64   `json:"peak"`
	}
	markDoc struct {
		PID     int32  `json:"pid"`
		Group   string `json:"group"`
		Name    string `json:"name"`
		Message string `json:"message,omitempty"`
		Start   int64  `json:"start_ns"`
		Dur     int64  `json:"dur_ns"`
	}
	counterDoc struct {
		Category string `json:"category"`
		Name     string `json:"name"`
		// Points are [time, value] pairs; with more updates than
		// twice the buckets, each bucket's smallest and largest value.
		Points      [][2]float64 `json:"points"`
		PointsTotal int          `json:"points_total"`
	}
	// funcRow is a function table's row: its FuncStat and where in the
	// source it spent its self value (file:line), or its file.
	funcRow struct {
		analyze.FuncStat
		Source string `json:"source,omitempty"`
	}
	logsDoc struct {
		// Total counts the logs in the range; Logs are the first of
		// them, up to the limit.
		Total int      `json:"total"`
		Logs  []logDoc `json:"logs"`
	}
	// marksDoc counts the marks of the range and gives their durations
	// by group and name (sorted by group, then name).
	marksDoc struct {
		Total int                `json:"total"`
		Stats []analyze.MarkStat `json:"stats"`
		// Longest are the longest marks of the range, longest first
		// (equal ones in file order), up to maxLongestMarks.
		Longest []markDoc `json:"longest"`
	}
	// countersDoc gives each counter's updates in the range.
	countersDoc struct {
		Counters []analyze.CounterStat `json:"counters"`
	}
	logDoc struct {
		Time     int64  `json:"time_ns"`
		PID      int32  `json:"pid"`
		Severity string `json:"severity"`
		Domain   string `json:"domain"`
		Message  string `json:"message"`
	}
	flameDoc struct {
		Since      int64             `json:"since_ns"`
		Until      int64             `json:"until_ns"`
		SampleType analyze.ValueType `json:"sample_type"`
		Total      int               `json:"total"`
		Samples    int               `json:"samples"`
		Root       *flameNode        `json:"root"`
		Hidden     int               `json:"hidden_nodes"`
		MinTotal   int               `json:"min_total"`
		Invert     bool              `json:"invert"`
		Functions  []funcRow         `json:"functions,omitempty"`
		FuncCount  int               `json:"function_count,omitempty"`
		Filter     filterDoc         `json:"filter"`
	}
	// filterDoc is the selection's filter other than time, as the
	// request named it.
	filterDoc struct {
		PIDs      []int32 `json:"pids,omitempty"`
		TIDs      []int32 `json:"tids,omitempty"`
		Container string  `json:"container,omitempty"`
		Comm      string  `json:"comm,omitempty"`
	}
)

// meta returns the capture's summary and processes, by container.
func (s *Server) meta(*http.Request) (any, error) {
	p, t := s.p, s.p.Timeline
	doc := metaDoc{
		File: s.file, CaptureTime: p.Header.CaptureTime, Duration: p.End - p.Start,
		Warnings: p.Warnings, Marks: len(t.Marks), Counters: len(t.Counters), Logs: len(t.Logs),
		Containers: []containerDoc{},
	}
	for i, st := range p.SampleTypes {
		doc.SampleTypes = append(doc.SampleTypes, sampleType{st, p.Totals[i]})
	}
	if p.HasLost {
		doc.Lost = &p.Lost
	}
	nt := max(1, len(p.SampleTypes))
	values := map[int32][]int64{}
	for i := range p.Samples {
		sm := &p.Samples[i]
		pv := values[sm.PID]
		if pv == nil {
			pv = make([]int64, nt)
			values[sm.PID] = pv
		}
		for t := range pv {
			pv[t] += p.Value(sm, t)
		}
	}
	byLabel := map[string]int{}
	for _, ps := range t.Processes {
		label := ps.Container.Label()
		if pr := p.Process(ps.PID); pr != nil && ps.Container == nil {
			label = pr.Container.Label()
		}
		i, ok := byLabel[label]
		if !ok {
			i = len(doc.Containers)
			byLabel[label] = i
			doc.Containers = append(doc.Containers, containerDoc{Label: label, Values: make([]int64, nt)})
		}
		pv := values[ps.PID]
		if pv == nil {
			pv = make([]int64, nt)
		}
		for t, v := range pv {
			doc.Containers[i].Values[t] += v
		}
		pd := processDoc{
			PID: ps.PID, NSPID: ps.NSPID, PPID: ps.PPID, Comm: ps.Comm, Cmdline: ps.Cmdline,
			Start: max(0, ps.Start-p.Start), End: max(0, ps.End-p.Start), Exited: ps.Exited,
			Samples: ps.Samples, Values: pv, Threads: []threadDoc{},
		}
		for _, pg := range ps.Programs {
			pd.Programs = append(pd.Programs, programDoc{Since: max(0, pg.Since-p.Start), Comm: pg.Comm, Cmdline: pg.Cmdline})
		}
		if th := p.Thread(ps.PID); th != nil && th.Samples > 0 {
			pd.Threads = append(pd.Threads, threadDoc{TID: ps.PID, Comm: ps.Comm, Samples: th.Samples})
		}
		for _, ts := range ps.Tasks {
			if ts.Samples > 0 {
				pd.Threads = append(pd.Threads, threadDoc{TID: ts.TID, Comm: ts.Comm, Samples: ts.Samples})
			}
		}
		doc.Containers[i].Processes = append(doc.Containers[i].Processes, pd)
	}
	for i := range doc.Containers {
		slices.SortStableFunc(doc.Containers[i].Processes, func(a, b processDoc) int { return cmp.Compare(b.Samples, a.Samples) })
	}
	return doc, nil
}

// timeline returns the whole capture's lanes, marks and counters in
// buckets (parameter buckets, default 1000) weighed by the sample type
// value.
func (s *Server) timeline(r *http.Request) (any, error) {
	q, err := s.parseQuery(r)
	if err != nil {
		return nil, err
	}
	n := 1000
	if b := r.URL.Query().Get("buckets"); b != "" {
		if n, err = strconv.Atoi(b); err != nil || n < 1 || n > maxBuckets {
			return nil, fmt.Errorf("parameter buckets: %q is not a number from 1 to %d", b, maxBuckets)
		}
	}
	p, t := s.p, s.p.Timeline
	dur := max(1, p.End-p.Start)
	width := (dur + int64(n) - 1) / int64(n)
	bucket := func(ts int64) int { return min(n-1, max(0, int((ts-p.Start)/width))) }
	x, err := s.index(q.view.Value)
	if err != nil {
		return nil, err
	}
	v := x.v // the whole capture's samples of the sample type
	doc := timelineDoc{Buckets: n, BucketNs: width, MarksTotal: len(t.Marks), Lanes: []laneDoc{}, Marks: []markDoc{}, Counters: []counterDoc{}}
	type key struct{ pid, tid int32 }
	lanes := map[key][]int64{}
	add := func(k key, b int, w int64) {
		d := lanes[k]
		if d == nil {
			d = make([]int64, n)
			lanes[k] = d
		}
		d[b] += w
	}
	for i := range v.Samples {
		sm := &v.Samples[i]
		w := v.Value(sm, q.view.Value)
		if w == 0 {
			continue
		}
		b := bucket(sm.Time)
		add(key{sm.PID, sm.TID}, b, w)
		add(key{sm.PID, 0}, b, w)
	}
	for k, d := range lanes {
		l := laneDoc{PID: k.pid, TID: k.tid, At: []int32{}, W: []int64{}}
		for b, w := range d {
			if w != 0 {
				l.At, l.W, l.Peak = append(l.At, int32(b)), append(l.W, w), max(l.Peak, w)
			}
		}
		doc.Lanes = append(doc.Lanes, l)
	}
	slices.SortFunc(doc.Lanes, func(a, b laneDoc) int {
		return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.TID, b.TID))
	})
	for i := range t.Marks {
		if len(doc.Marks) == maxMarks {
			break
		}
		m := &t.Marks[i]
		doc.Marks = append(doc.Marks, markDoc{PID: m.PID, Group: m.Group, Name: m.Name, Message: m.Message, Start: m.Time - p.Start, Dur: m.Duration})
	}
	counter := func(category, name string, points []analyze.CounterPoint) {
		cd := counterDoc{Category: category, Name: name, PointsTotal: len(points), Points: [][2]float64{}}
		if len(points) <= 2*n {
			for _, pt := range points {
				cd.Points = append(cd.Points, [2]float64{float64(pt.Time - p.Start), pt.Value})
			}
		} else {
			cd.Points = bucketMinMax(points, p.Start, width)
		}
		doc.Counters = append(doc.Counters, cd)
	}
	for _, c := range t.Counters {
		counter(c.Category, c.Name, c.Points)
	}
	if h, changes := s.liveHeap(); len(h) > 0 {
		counter(heapCategory, heapName, h)
		doc.Counters[len(doc.Counters)-1].PointsTotal = changes
	}
	return doc, nil
}

// The timeline's track of the live bytes of the recorded allocations.
const heapCategory, heapName = "Memory", "Heap in use (recorded allocations, bytes)"

// liveHeap returns the live bytes of the capture's allocations over time,
// each of maxBuckets buckets of the capture keeping its smallest and
// largest value (a timeline asks for at most that many), and how many
// times they changed; nil without allocations.
func (s *Server) liveHeap() ([]analyze.CounterPoint, int) {
	s.heapOnce.Do(func() {
		if !s.p.HasAllocations() {
			return
		}
		vi, err := s.p.ValueIndex(analyze.AllocSpaceType.Type)
		if err != nil {
			return
		}
		if v, err := s.p.View(analyze.ViewOptions{Value: vi}); err == nil {
			width := max(1, (s.p.End-s.p.Start+maxBuckets-1)/maxBuckets)
			s.heap, s.heapChanges = v.LiveHeap(s.p.Start, width)
		}
	})
	return s.heap, s.heapChanges
}

// bucketMinMax returns the smallest and largest value of points in each
// bucket of width ns from start, in time order.
func bucketMinMax(points []analyze.CounterPoint, start, width int64) [][2]float64 {
	var out [][2]float64
	for i := 0; i < len(points); {
		b := (points[i].Time - start) / width
		lo, hi := points[i], points[i]
		j := i + 1
		for ; j < len(points) && (points[j].Time-start)/width == b; j++ {
			if points[j].Value < lo.Value {
				lo = points[j]
			}
			if points[j].Value > hi.Value {
				hi = points[j]
			}
		}
		if hi.Time < lo.Time {
			lo, hi = hi, lo
		}
		out = append(out, [2]float64{float64(lo.Time - start), lo.Value})
		if hi != lo {
			out = append(out, [2]float64{float64(hi.Time - start), hi.Value})
		}
		i = j
	}
	return out
}

// selection parses a view's request and selects its samples: the query,
// the index of its sample type, the samples, and the header of its
// document (range, sample type, sample count, filter).
func (s *Server) selection(r *http.Request) (query, *valueIndex, []analyze.Sample, flameDoc, error) {
	q, err := s.parseQuery(r)
	if err != nil {
		return q, nil, nil, flameDoc{}, err
	}
	x, err := s.index(q.view.Value)
	if err != nil {
		return q, nil, nil, flameDoc{}, err
	}
	samples, err := x.selectSamples(q.view.Filter)
	if err != nil {
		return q, nil, nil, flameDoc{}, err
	}
	doc := flameDoc{
		Since: int64(q.view.Filter.Since), Until: int64(q.view.Filter.Until),
		SampleType: s.sampleType(q.view.Value), Samples: len(samples), Filter: filterOf(q.view.Filter),
	}
	return q, x, samples, doc, nil
}

// flame returns the call tree of the selection (parameters since, until,
// value, invert), without the nodes at most flameMinShare of its total.
func (s *Server) flame(r *http.Request) (any, error) {
	q, x, samples, doc, err := s.selection(r)
	if err != nil {
		return nil, err
	}
	doc.Invert = q.view.Invert
	doc.Root, doc.MinTotal, doc.Hidden = x.tree(samples, q.view.Invert, flameMinShare)
	doc.Total = doc.Root.Total
	return doc, nil
}

// top returns the function table of the selection: the first limit
// functions by self value.
func (s *Server) top(r *http.Request) (any, error) {
	q, x, samples, doc, err := s.selection(r)
	if err != nil {
		return nil, err
	}
	fs := x.v.Top(samples)
	doc.Total, doc.FuncCount, doc.Functions = int(x.v.Weight(samples)), len(fs), []funcRow{}
	fs = fs[:min(len(fs), q.limit)]
	for i, src := range x.sources(samples, fs) {
		doc.Functions = append(doc.Functions, funcRow{fs[i], src})
	}
	return doc, nil
}

// logs returns the logs of the range (parameters since, until, limit),
// in file order.
func (s *Server) logs(r *http.Request) (any, error) {
	q, err := s.parseQuery(r)
	if err != nil {
		return nil, err
	}
	logs := s.p.Timeline.Logs
	in, err := s.selectTimed(q, len(logs), func(i int) (int64, int32) { return logs[i].Time, logs[i].PID })
	if err != nil {
		return nil, err
	}
	doc := logsDoc{Logs: []logDoc{}}
	for _, i := range in {
		l := &logs[i]
		doc.Total++
		if len(doc.Logs) < q.limit {
			doc.Logs = append(doc.Logs, logDoc{Time: l.Time - s.p.Start, PID: l.PID, Severity: report.SeverityName(l.Severity), Domain: l.Domain, Message: l.Message})
		}
	}
	return doc, nil
}

// marks returns the count and durations of the marks of the range
// (parameters since, until) by group and name, as `nsprof report --marks`
// gives them for the same range and pids.
func (s *Server) marks(r *http.Request) (any, error) {
	q, err := s.parseQuery(r)
	if err != nil {
		return nil, err
	}
	marks := s.p.Timeline.Marks
	in, err := s.selectTimed(q, len(marks), func(i int) (int64, int32) { return marks[i].Time, marks[i].PID })
	if err != nil {
		return nil, err
	}
	sel := make([]capture.Mark, len(in))
	for j, i := range in {
		sel[j] = marks[i]
	}
	doc := marksDoc{Total: len(sel), Stats: append([]analyze.MarkStat{}, analyze.MarkStats(sel)...), Longest: []markDoc{}}
	slices.SortStableFunc(in, func(a, b int32) int { return cmp.Compare(marks[b].Duration, marks[a].Duration) })
	for _, i := range in[:min(len(in), maxLongestMarks)] {
		m := &marks[i]
		doc.Longest = append(doc.Longest, markDoc{PID: m.PID, Group: m.Group, Name: m.Name, Message: m.Message, Start: m.Time - s.p.Start, Dur: m.Duration})
	}
	return doc, nil
}

// maxLongestMarks is how many of the longest marks api/marks lists.
const maxLongestMarks = 20

// counters returns each counter's updates in the range (parameters
// since, until): their count, smallest, mean, largest and last value, as
// `nsprof report --counters` gives them. Counters are the machine's: the
// process filter does not apply.
func (s *Server) counters(r *http.Request) (any, error) {
	q, err := s.parseQuery(r)
	if err != nil {
		return nil, err
	}
	since, until := s.rangeOf(q)
	doc := countersDoc{Counters: []analyze.CounterStat{}}
	for _, c := range s.p.Timeline.Counters {
		doc.Counters = append(doc.Counters, c.Stats(since, until))
	}
	return doc, nil
}

// summary returns the capture's facts as `nsprof report --summary --json`
// gives them: duration, CPUs, samples and losses, processes and threads,
// metadata, collector, frames by type.
func (s *Server) summary(*http.Request) (any, error) {
	var buf bytes.Buffer
	o := report.Options{View: report.ViewSummary, Format: report.JSON, File: s.file}
	if err := report.Generate(&buf, report.Data{Timeline: s.p.Timeline}, o); err != nil {
		return nil, err
	}
	return json.RawMessage(buf.Bytes()), nil
}

// rangeOf returns q's range on the capture clock, [since, until).
func (s *Server) rangeOf(q query) (since, until int64) {
	since, until = s.p.Start+int64(q.view.Filter.Since), int64(1<<63-1)
	if q.view.Filter.Until > 0 {
		until = s.p.Start + int64(q.view.Filter.Until)
	}
	return since, until
}

// selectTimed returns the indexes, in order, of the n items of the
// timeline (logs, marks) that q's range and filter select, at(i) giving
// item i's time and process: those whose time is in the range, filtered
// as samples are but for the thread (an item has none).
func (s *Server) selectTimed(q query, n int, at func(i int) (int64, int32)) ([]int32, error) {
	since, until := s.rangeOf(q)
	// As samples of no stack with their index for Row.
	var in []analyze.Sample
	for i := range n {
		if t, pid := at(i); t >= since && t < until {
			in = append(in, analyze.Sample{Time: t, PID: pid, Stack: -1, Row: int32(i)})
		}
	}
	f := q.view.Filter
	f.TIDs, f.Since, f.Until = nil, 0, 0
	in, err := s.p.SelectFrom(in, f)
	if err != nil {
		return nil, err
	}
	out := make([]int32, len(in))
	for j := range in {
		out[j] = in[j].Row
	}
	return out, nil
}

// filterOf returns the filter f other than time.
func filterOf(f analyze.Filter) filterDoc {
	return filterDoc{PIDs: f.PIDs, TIDs: f.TIDs, Container: f.Container, Comm: f.Comm}
}

// sampleType returns sample type i, "samples" in a profile without types.
func (s *Server) sampleType(i int) analyze.ValueType {
	if i < len(s.p.SampleTypes) {
		return s.p.SampleTypes[i]
	}
	return analyze.SamplesType
}
