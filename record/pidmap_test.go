package record

import "testing"

// TestPIDMapForget: forgetting processes leaves nothing of those outside
// the command's tree, and the command's tree's trace-fd ids are still
// translated after its processes are forgotten, whichever of parent and
// child goes first.
func TestPIDMapForget(t *testing.T) {
	const host, nsX, nsY = 1, 10, 20
	for _, parentFirst := range []bool{false, true} {
		m := newPIDMap(host)
		m.setRoot(100)
		m.addProcess(100, 1, host)
		m.addProcess(101, 100, nsX) // unshare's child
		m.addProcess(102, 101, nsX)
		m.addProcess(200, 1, nsY) // another container
		m.addProcess(300, 1, host)
		m.addTask(101, []int{101, 1}, nsX)
		m.addTask(102, []int{102, 2}, nsX)
		m.addTask(200, []int{200, 1}, nsY)
		m.addTask(201, []int{201, 3}, nsY)
		order := []int{102, 101, 200, 300, 100}
		if parentFirst {
			order = []int{100, 101, 102, 300, 200}
		}
		for _, pid := range order {
			m.forget(pid)
		}
		if len(m.nsOf) != 0 || len(m.parent) != 0 {
			t.Errorf("parent first %t: after every process is forgotten, nsOf %v, parent %v", parentFirst, m.nsOf, m.parent)
		}
		for pid := range m.inTreeGone {
			if pid != 100 && pid != 101 && pid != 102 {
				t.Errorf("parent first %t: %d kept as in the command's tree", parentFirst, pid)
			}
		}
		tr := m.translator()
		if tr == nil {
			t.Fatalf("parent first %t: no translation after the tree was forgotten", parentFirst)
		}
		for id, want := range map[int32]int32{1: 101, 2: 102, 3: 3, 7: 7} {
			if got := tr(id); got != want {
				t.Errorf("parent first %t: id %d translated to %d, want %d", parentFirst, id, got, want)
			}
		}
		// A cut keeps the tree's namespace ids, not the other's.
		m.prune(func(int) bool { return false })
		if _, ok := m.inner[nsX]; !ok {
			t.Errorf("parent first %t: a cut dropped the command's namespace", parentFirst)
		}
		if _, ok := m.inner[nsY]; ok {
			t.Errorf("parent first %t: a cut kept another namespace", parentFirst)
		}
	}
}

// TestPIDMapNoCommand: a recording without a command keeps no parents,
// and namespaces only of processes outside the recorder's.
func TestPIDMapNoCommand(t *testing.T) {
	m := newPIDMap(1)
	for pid := 100; pid < 200; pid++ {
		m.addProcess(pid, pid-1, 1)
	}
	m.addProcess(300, 1, 5)
	if len(m.parent) != 0 || len(m.nsOf) != 1 {
		t.Errorf("parents %d, namespaces %v; want none and one", len(m.parent), m.nsOf)
	}
	m.forget(300)
	if len(m.nsOf) != 0 || len(m.inTreeGone) != 0 {
		t.Errorf("after forgetting: namespaces %v, in tree %v", m.nsOf, m.inTreeGone)
	}
	if m.translator() != nil {
		t.Error("a translator without a command")
	}
}

// TestPIDMapReusedPID: a forgotten pid of the command's tree given to a
// process outside it is not taken for the tree's.
func TestPIDMapReusedPID(t *testing.T) {
	m := newPIDMap(1)
	m.setRoot(100)
	m.addProcess(100, 1, 1)
	m.addProcess(101, 100, 1)
	m.forget(101)
	m.addProcess(101, 1, 9)
	m.addTask(101, []int{101, 4}, 9)
	if m.inTree(101) {
		t.Error("a new process with a forgotten tree process's pid is in the tree")
	}
	if tr := m.translator(); tr != nil && tr(4) != 4 {
		t.Errorf("id 4 of an outside namespace translated to %d", tr(4))
	}
}
