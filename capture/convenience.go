package capture

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
)

// AddJITMap returns the JIT address for name, [JITMapMark] | n with n = 1,
// 2, 3, …, allocating one on first use. Names are written as JITMAP frames
// on Flush, or earlier when many are pending.
func (w *Writer) AddJITMap(name string) (uint64, error) {
	name = cutNUL(name)
	if a, ok := w.jitIDs[name]; ok {
		return a, nil
	}
	if len(name) > MaxFrameLen-jitmapFixed-9 {
		return 0, tooLarge(TypeJITMap, jitmapFixed+9+len(name))
	}
	if w.jitBytes+9+len(name) > 16*1024-jitmapFixed {
		if err := w.flushJIT(); err != nil {
			return 0, err
		}
	}
	w.jitSeq++
	a := JITMapMark | w.jitSeq
	w.jitIDs[name] = a
	w.jitPending = append(w.jitPending, JITEntry{Addr: a, Name: name})
	w.jitBytes += 9 + len(name)
	return a, nil
}

func (w *Writer) flushJIT() error {
	if len(w.jitPending) == 0 {
		return nil
	}
	f := &JITMap{FrameHeader: FrameHeader{CPU: -1, PID: int32(os.Getpid()), Time: w.opts.Clock()}, Entries: w.jitPending}
	if f.Time == 0 || f.Time < w.start {
		f.Time = w.start
	}
	end := w.end
	err := w.writeJITMap(f)
	w.end = end // JIT frames carry the writer's clock, not an event time
	w.jitPending = w.jitPending[:0]
	w.jitBytes = 0
	return err
}

// RequestCounters reserves n consecutive counter ids and returns the first.
// Ids start at 1; 0 is reserved.
func (w *Writer) RequestCounters(n int) (uint32, error) {
	if n < 0 || uint64(w.counterID)+uint64(n) > MaxCounterID+1 {
		return 0, fmt.Errorf("request %d counters: ids exhausted (next %d, max %d)", n, w.counterID, MaxCounterID)
	}
	id := w.counterID
	w.counterID += uint32(n)
	return id, nil
}

// DefineCounters writes counter definitions, split over as many CTRDEF
// frames as needed.
func (w *Writer) DefineCounters(h FrameHeader, counters []Counter) error {
	for len(counters) > 0 {
		n := min(len(counters), MaxCountersPerFrame)
		if err := w.writeCounterDefine(&CounterDefine{FrameHeader: h, Counters: counters[:n]}); err != nil {
			return err
		}
		counters = counters[n:]
	}
	return nil
}

// SetCounters writes counter values, split over as many CTRSET frames as
// needed.
func (w *Writer) SetCounters(h FrameHeader, updates []CounterUpdate) error {
	for len(updates) > 0 {
		n := min(len(updates), MaxCounterValuesPerFrame)
		if err := w.writeCounterSet(&CounterSet{FrameHeader: h, Updates: updates[:n]}); err != nil {
			return err
		}
		updates = updates[n:]
	}
	return nil
}

// AddMark writes a MARK frame for process pid on an unknown CPU.
func (w *Writer) AddMark(time int64, pid int32, duration int64, group, name, message string) error {
	return w.writeMark(&Mark{FrameHeader: FrameHeader{CPU: -1, PID: pid, Time: time}, Duration: duration, Group: group, Name: name, Message: message})
}

// AddLog writes a LOG frame for process pid on an unknown CPU.
func (w *Writer) AddLog(time int64, pid int32, severity uint16, domain, message string) error {
	return w.writeLog(&Log{FrameHeader: FrameHeader{CPU: -1, PID: pid, Time: time}, Severity: severity, Domain: domain, Message: message})
}

// AddMetadata writes a METADATA frame.
func (w *Writer) AddMetadata(time int64, id, value string) error {
	return w.writeMetadata(&Metadata{FrameHeader: FrameHeader{CPU: -1, PID: -1, Time: time}, ID: id, Value: value})
}

// fileChunkSize is the data size of each FILE_CHUNK: 16 KiB frames, as
// Sysprof 3.46 writes them (sysprof_capture_writer_add_file_fd). Its
// `sysprof-cli --merge` aborts on a FILE_CHUNK frame of more than 16 KiB
// (malloc's heap checks, or an assertion in
// sysprof_capture_reader_peek_frame): the 32 KiB frames of Sysprof 45
// made every capture of nsprof's unmergeable.
const fileChunkSize = 16*1024 - fileChunkFixed

// AddFile embeds the contents of r in the capture as FILE_CHUNK frames at
// path; the last data chunk has IsLast set, and an empty file is one empty
// last chunk. h is the header every chunk carries.
func (w *Writer) AddFile(h FrameHeader, path string, r io.Reader) error {
	// Each chunk is read ahead of the one written, to mark the last: the
	// two buffers take turns (a chunk's bytes are copied into the frame).
	buf := make([]byte, fileChunkSize)
	pend := make([]byte, 0, fileChunkSize)
	first := true
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 || first {
			if !first {
				if werr := w.writeFileChunk(&FileChunk{FrameHeader: h, Path: path, Data: pend}); werr != nil {
					return werr
				}
			}
			pend, buf = buf[:n], pend[:fileChunkSize]
			first = false
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return w.writeFileChunk(&FileChunk{FrameHeader: h, Path: path, Data: pend, IsLast: true})
		}
		if err != nil {
			return fmt.Errorf("embed %s: %w", path, err)
		}
	}
}

// AddFileBytes embeds data at path; see [Writer.AddFile]. The chunks are
// written from data itself: through AddFile's two chunk buffers, the
// mountinfo embedded for each process of a compile loop made 32 KB.
func (w *Writer) AddFileBytes(h FrameHeader, path string, data []byte) error {
	for {
		n := min(len(data), fileChunkSize)
		last := n == len(data)
		if err := w.writeFileChunk(&FileChunk{FrameHeader: h, Path: path, Data: data[:n], IsLast: last}); err != nil || last {
			return err
		}
		data = data[n:]
	}
}

// AddFileGzip embeds data gzip-compressed at path+".gz", as Sysprof 45+
// stores /proc files and __symbols__. [Files.Lookup] finds it by path.
func (w *Writer) AddFileGzip(h FrameHeader, path string, data []byte) error {
	return w.AddFileGzipLevel(h, path, data, gzip.DefaultCompression)
}

// AddFileGzipLevel is [Writer.AddFileGzip] at a compression level of
// gzip (gzip.BestSpeed for megabytes written as a recording ends: the
// default level took four times the CPU for a file a fifth smaller).
// Files are compressed by klauspost/compress, whose fastest level wrote a
// 5.4 MB /proc/kallsyms in 27 ms (1.06 MB) where compress/gzip's took 46
// (1.08 MB).
func (w *Writer) AddFileGzipLevel(h FrameHeader, path string, data []byte, level int) error {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, level)
	if err != nil {
		return fmt.Errorf("embedded file %s: %w", path, err)
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return w.AddFile(h, path+".gz", &b)
}

// MetaSymbolsFollow is the METADATA frame [Writer.AddSymbolsFile] writes
// right before the symbol bundle; its value is [SymbolsFile].
const MetaSymbolsFollow = "nsprof.symbols-follow"

// AddSymbolsFile embeds data, an encoded symbol bundle, at [SymbolsFile],
// behind a METADATA frame. Sysprof 3.46's reader looks for the bundle with
// sysprof_capture_reader_read_file_fd, which after reading a FILE_CHUNK of
// another file also skips the frame that follows it: in a run of other
// files' chunks it reads every other frame, so the bundle's first chunk
// was missed whenever the run before it had the wrong length (one more
// embedded file was enough), and Sysprof named nothing. A frame of another
// type right before the bundle is read whichever parity the run has.
func (w *Writer) AddSymbolsFile(h FrameHeader, data []byte) error {
	return w.AddSymbolsReader(h, bytes.NewReader(data))
}

// AddSymbolsReader is [Writer.AddSymbolsFile] with the bundle read from
// r (a [SymbolsBuilder]'s, whose parts are never copied into one).
func (w *Writer) AddSymbolsReader(h FrameHeader, r io.Reader) error {
	if err := w.AddMetadata(h.Time, MetaSymbolsFollow, SymbolsFile); err != nil {
		return err
	}
	return w.AddFile(h, SymbolsFile, r)
}
