package record

import (
	"io"
	"strconv"

	"nsprof/capture"
	"nsprof/container"
)

// maxContainerFile bounds the size of /run/.containerenv and
// /.flatpak-info copied into the capture.
const maxContainerFile = 64 << 10

// identify labels a live process with what it runs in and records, as
// Sysprof does, what describes its container: one OVERLAY frame per layer
// of its root file system (host directory → "/") and the container's
// /run/.containerenv (podman) or /.flatpak-info (Flatpak), read inside
// the process's root and stored as /proc/PID/root/... files.
func (r *recorder) identify(pid int, now int64) *capture.ContainerInfo {
	var cp *container.Process
	if r.sym != nil {
		// Share the symbolizer's view: one snapshot per process.
		cp = r.sym.reach(pid, r.sym.proc(pid))
	} else {
		p, err := container.Open(pid)
		if err == nil {
			defer p.Close()
			cp = p
		}
	}
	if cp == nil {
		return nil
	}
	id := cp.Identity()
	info := &capture.ContainerInfo{Kind: id.Kind, ID: id.ID, Name: id.Name, Rootless: id.Rootless, AppID: id.AppID, Root: id.Root}
	if id.Kind == container.KindHost {
		return info
	}
	h := capture.FrameHeader{CPU: -1, PID: int32(pid), Time: now}
	for i, dir := range cp.Layers() {
		if i > 255 {
			break // the frame's layer number is one byte
		}
		r.tr.write(&capture.Overlay{FrameHeader: h, Layer: uint8(i), Src: dir, Dst: "/"})
	}
	var file string
	switch id.Kind {
	case container.KindPodman:
		file = "/run/.containerenv"
	case container.KindFlatpak:
		file = "/.flatpak-info"
	}
	if file != "" {
		if f, _, err := cp.OpenFile(file); err == nil {
			b, err := io.ReadAll(io.LimitReader(f, maxContainerFile))
			f.Close()
			if err == nil && r.tr.err == nil {
				r.tr.err = r.w.AddFileBytes(h, "/proc/"+strconv.Itoa(pid)+"/root"+file, b)
			}
		}
	}
	return info
}
