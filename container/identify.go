package container

import (
	"fmt"
	"strings"
)

// Identity says what a process runs in.
type Identity struct {
	Kind     string // "host", "podman", "flatpak", "namespace" (other mount namespace: unshare, bwrap...)
	ID, Name string // podman container full id and name
	Rootless bool
	AppID    string // flatpak
	Root     string // host-side origin of its root if known (overlay merged/upper dir, bind source from mountinfo field 4, chroot dir)
	NSPID    int    // pid inside its innermost pid namespace
}

// Kinds of [Identity].
const (
	KindHost      = "host"
	KindPodman    = "podman"
	KindFlatpak   = "flatpak"
	KindNamespace = "namespace"
)

// Identify says what pid runs in. A podman container is recognised by its
// libpod-<id> cgroup (rootful) or its conmon ancestor's -c <id> and
// -n <name> (rootless podman on cgroup v1 has no libpod cgroup); names come
// from conmon or containers.json. A Flatpak sandbox is recognised by
// /.flatpak-info inside its root. Any other process whose mount namespace
// differs from ours, or whose root is not "/", is "namespace"; the rest is
// "host". /proc/1 is not consulted: it is unreadable in some sandboxes.
func Identify(pid int) (Identity, error) {
	p, err := Open(pid)
	if err != nil {
		return Identity{}, fmt.Errorf("identify: %w", err)
	}
	defer p.Close()
	return p.Identity(), nil
}

// Identity is [Identify] for an open Process, from what Open recorded.
func (p *Process) Identity() Identity {
	s := p.snap
	id := Identity{Kind: KindHost, NSPID: s.status.InnermostTgid()}
	if s.statusErr != nil {
		id.NSPID = 0
	}
	rootMount, _, haveRoot := coveringMount(s.mounts, "/")
	if cid := s.podmanID(); cid != "" {
		id.Kind, id.ID = KindPodman, cid
		if s.conmon != nil {
			id.Name = s.conmon.Name
			id.Rootless = s.conmonUID > 0
		}
		if st, err := s.podmanStorage(); err == nil {
			id.ID = st.ID
			if id.Name == "" && len(st.Names) > 0 {
				id.Name = st.Names[0]
			}
			id.Root = st.Root()
			if s.conmon == nil {
				id.Rootless = !strings.HasPrefix(st.GraphRoot, "/var/lib/")
			}
		} else if haveRoot {
			if o, ok := overlayFromMount(rootMount); ok {
				id.Root = o.Upper
			} else if o, ok := s.fuseOverlay[rootMount.Dev]; ok {
				id.Root = o.Merged
			}
		}
		return id
	}
	if s.flatpak != nil {
		id.Kind, id.AppID = KindFlatpak, s.flatpak.AppID
		id.Root = s.flatpak.AppPath
		return id
	}
	if (s.mntNS != 0 && s.selfMntNS != 0 && s.mntNS != s.selfMntNS) || (s.rootLink != "" && s.rootLink != "/") {
		id.Kind = KindNamespace
		switch {
		case s.rootLink != "" && s.rootLink != "/":
			id.Root = s.rootLink // chroot
		case haveRoot:
			if o, ok := overlayFromMount(rootMount); ok {
				id.Root = o.Upper
			} else if rootMount.FSType != "tmpfs" {
				id.Root = rootMount.Root
			}
		}
	}
	return id
}

// String returns a short label: "podman:hot1 (58914741353e, rootless)",
// "flatpak:org.test.Hot", "namespace:/srv/root", "host".
func (id Identity) String() string {
	switch id.Kind {
	case KindPodman:
		var b strings.Builder
		b.WriteString("podman:")
		name := id.Name
		if name == "" {
			name = shortID(id.ID)
		}
		b.WriteString(name)
		var extra []string
		if id.Name != "" && id.ID != "" {
			extra = append(extra, shortID(id.ID))
		}
		if id.Rootless {
			extra = append(extra, "rootless")
		}
		if len(extra) > 0 {
			b.WriteString(" (" + strings.Join(extra, ", ") + ")")
		}
		return b.String()
	case KindFlatpak:
		return "flatpak:" + id.AppID
	case KindNamespace:
		if id.Root != "" {
			return "namespace:" + id.Root
		}
		return "namespace"
	case "":
		return "unknown"
	}
	return id.Kind
}
