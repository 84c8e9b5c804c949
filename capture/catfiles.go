package capture

import (
	"bytes"
	"fmt"
	"strconv"
)

// catMerged are the embedded files [CatFiles] merges rather than copies:
// each input has its own, and readers take the first file of a path, so a
// copy would leave every input's but the first's unread (Sysprof's
// resolver would name only the first input's processes).
var catMerged = map[string]bool{
	SymbolsFile: true, SymbolsFile + ".gz": true,
	LinesFile: true, LinesFile + ".gz": true,
	ProcessFile: true, ProcessFile + ".gz": true,
	OffCPUFile: true, OffCPUFile + ".gz": true,
	StacksFile: true, StacksFile + ".gz": true,
	CallsFile: true, CallsFile + ".gz": true,
}

// catMerge gathers the merged files of the inputs of [CatFiles], which
// writes them once, after every input's frames.
type catMerge struct {
	mapPID func(int32) int32
	syms   []Symbol
	lines  bytes.Buffer // records, without the header line
	procs  bytes.Buffer // lines of the process files
	offCPU []byte
	// stacks are chunks of StacksFile records, each within
	// StacksFileChunkData; calls the records of CallsFile.
	stacks  [][]byte
	calls   []byte
	present map[string]bool // the files some input had, by path without ".gz"
}

// divert reports whether f is part of a merged file, or the METADATA frame
// that announces a symbol bundle, and keeps what it has in files.
func divert(f Frame, files *Files) bool {
	switch f := f.(type) {
	case *FileChunk:
		if catMerged[f.Path] {
			files.Add(f)
			return true
		}
	case *Metadata:
		// The merged bundle gets its own, right before it.
		return f.ID == MetaSymbolsFollow
	}
	return false
}

// add merges the files one input had; an error names the file that could
// not be read (the part of it read before the damage is kept).
func (m *catMerge) add(files *Files) error {
	if m.present == nil {
		m.present = make(map[string]bool)
	}
	id := func(v int32) int32 {
		if v <= 0 || m.mapPID == nil {
			return v
		}
		return m.mapPID(v)
	}
	var errs []error
	has := func(path string) bool {
		ok := files.Has(path) || files.Has(path+".gz")
		m.present[path] = m.present[path] || ok
		return ok
	}
	if has(SymbolsFile) {
		b, err := files.Lookup(SymbolsFile)
		if err == nil {
			var t *SymbolTable
			t, err = DecodeSymbols(b)
			for _, s := range t.Symbols() {
				s.PID = id(s.PID)
				m.syms = append(m.syms, s)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", SymbolsFile, err))
		}
	}
	if has(LinesFile) {
		if err := m.addLines(files, id); err != nil {
			errs = append(errs, err)
		}
	}
	if has(ProcessFile) {
		b, err := files.Lookup(ProcessFile)
		if err == nil {
			var ps []ProcessInfo
			var ts []ThreadInfo
			ps, ts, err = DecodeProcessFile(b)
			err = m.addProcesses(ps, ts, id, err)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ProcessFile, err))
		}
	}
	if has(OffCPUFile) {
		b, err := files.Lookup(OffCPUFile)
		if err == nil {
			var rs []OffCPU
			rs, err = DecodeOffCPU(b)
			for _, r := range rs {
				r.TID = id(r.TID)
				m.offCPU = AppendOffCPU(m.offCPU, r)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", OffCPUFile, err))
		}
	}
	if has(StacksFile) {
		b, err := files.Lookup(StacksFile)
		if err == nil {
			err = DecodeStacks(b, func(r *StackRecord) {
				r.PID, r.TID = id(r.PID), id(r.TID)
				n := len(m.stacks)
				if n == 0 || len(m.stacks[n-1])+StackRecordSize(len(r.Addrs)) > StacksFileChunkData {
					m.stacks = append(m.stacks, nil)
					n++
				}
				m.stacks[n-1] = AppendStack(m.stacks[n-1], *r)
			})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", StacksFile, err))
		}
	}
	if has(CallsFile) {
		b, err := files.Lookup(CallsFile)
		if err == nil {
			var cs []Call
			cs, err = DecodeCalls(b)
			for _, c := range cs {
				c.PID, c.TID = id(c.PID), id(c.TID)
				m.calls = AppendCall(m.calls, c)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", CallsFile, err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	err := errs[0]
	for _, e := range errs[1:] {
		err = fmt.Errorf("%w; %w", err, e)
	}
	return err
}

// addLines appends the records of an input's [LinesFile], their pids
// mapped with id.
func (m *catMerge) addLines(files *Files, id func(int32) int32) error {
	b, err := files.Lookup(LinesFile)
	if err != nil {
		return fmt.Errorf("%s: %w", LinesFile, err)
	}
	head, rest, _ := bytes.Cut(b, []byte{'\n'})
	if !isLinesMagic(bytes.TrimSuffix(head, []byte{'\r'})) {
		return fmt.Errorf("%s line 1: header %.40q, want %q", LinesFile, head, linesMagic)
	}
	// Records are copied in order, so a reference to an earlier record
	// (see EncodeLines) still counts back to the same one; it must not
	// reach before this input's first.
	recs := 0
	for n := 2; len(rest) > 0; n++ {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte{'\n'})
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		pid, tail, ok := bytes.Cut(line, []byte{'\t'})
		obj := bytes.HasPrefix(pid, []byte{'@'}) // a file's record: no pid to map
		v, err := strconv.ParseInt(string(pid), 10, 32)
		if !ok || (err != nil && !obj) {
			return fmt.Errorf("%s line %d: bad pid %.20q", LinesFile, n, pid)
		}
		if _, ref, ok := bytes.Cut(tail, []byte{'\t'}); ok && bytes.HasPrefix(ref, []byte{'^'}) {
			if k, err := strconv.Atoi(string(bytes.TrimSuffix(ref[1:], []byte{'\r'}))); err != nil || k < 1 || k > recs {
				return fmt.Errorf("%s line %d: reference %.20q: not one of the %d records before", LinesFile, n, ref, recs)
			}
		}
		recs++
		if obj {
			m.lines.Write(pid)
		} else {
			m.lines.WriteString(strconv.FormatInt(int64(id(int32(v))), 10))
		}
		m.lines.WriteByte('\t')
		m.lines.Write(tail)
		m.lines.WriteByte('\n')
	}
	return nil
}

// addProcesses appends the lines of an input's [ProcessFile] decoded
// before decodeErr, their ids mapped with id; it returns decodeErr, or
// the error of encoding them again.
func (m *catMerge) addProcesses(ps []ProcessInfo, ts []ThreadInfo, id func(int32) int32, decodeErr error) error {
	ids := func(v int) int { return int(id(int32(v))) }
	for _, p := range ps {
		p.PID, p.PPID = ids(p.PID), ids(p.PPID)
		b, err := EncodeProcessInfo(p)
		if err != nil {
			return err
		}
		m.procs.Write(b)
	}
	for _, t := range ts {
		t.TID, t.PID = ids(t.TID), ids(t.PID)
		b, err := EncodeThreadInfo(t)
		if err != nil {
			return err
		}
		m.procs.Write(b)
	}
	return decodeErr
}

// write embeds the merged files in dst, the symbol bundle last, behind
// its METADATA frame ([Writer.AddSymbolsFile]), as nsprof record writes
// it.
func (m *catMerge) write(dst *Writer, h FrameHeader) error {
	if m.present[ProcessFile] {
		if err := dst.AddFileBytes(h, ProcessFile, m.procs.Bytes()); err != nil {
			return err
		}
	}
	if m.present[OffCPUFile] {
		for b := m.offCPU; ; b = b[OffCPUFileChunkData:] {
			n := min(len(b), OffCPUFileChunkData)
			if err := dst.AddFileChunk(h, OffCPUFile, b[:n], n == len(b)); err != nil {
				return err
			}
			if n == len(b) {
				break
			}
		}
	}
	if m.present[StacksFile] {
		for i, b := range m.stacks {
			if err := dst.AddFileChunk(h, StacksFile, b, i == len(m.stacks)-1); err != nil {
				return err
			}
		}
		if len(m.stacks) == 0 {
			if err := dst.AddFileChunk(h, StacksFile, nil, true); err != nil {
				return err
			}
		}
	}
	if m.present[CallsFile] {
		for b := m.calls; ; b = b[CallsFileChunkData:] {
			n := min(len(b), CallsFileChunkData)
			if err := dst.AddFileChunk(h, CallsFile, b[:n], n == len(b)); err != nil {
				return err
			}
			if n == len(b) {
				break
			}
		}
	}
	if m.present[LinesFile] {
		text := append([]byte(linesMagic+"\n"), m.lines.Bytes()...)
		if err := dst.AddFileGzip(h, LinesFile, text); err != nil {
			return err
		}
	}
	if m.present[SymbolsFile] {
		b, err := EncodeSymbols(m.syms)
		if err != nil {
			return err
		}
		if err := dst.AddSymbolsFile(h, b); err != nil {
			return err
		}
	}
	return nil
}
