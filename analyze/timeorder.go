package analyze

// timeOrder returns the indices of allocs in time order, file order kept
// among equal times, or nil when they are in that order already. The
// frames come as a few runs in time order (each thread's, as its ring
// was drained: 66 runs for the 4 M frames of 4 threads), which are
// merged: a stable sort of the 40-byte events themselves, in place, was
// a third of the report of such a capture (0.7 s of 2).
func timeOrder(allocs *allocEvents) []int32 {
	var starts []int32 // where each run begins
	n := allocs.len()
	for i := 1; i < n; i++ {
		if allocs.at(i).time < allocs.at(i-1).time {
			if starts == nil {
				starts = []int32{0}
			}
			starts = append(starts, int32(i))
		}
	}
	if starts == nil {
		return nil
	}
	// A heap of the runs by their next event's time, then by the run's
	// place in the file (so by file order for equal times).
	type head struct {
		time     int64
		run      int32
		pos, end int32
	}
	h := make([]head, len(starts))
	for r, s := range starts {
		end := int32(n)
		if r+1 < len(starts) {
			end = starts[r+1]
		}
		h[r] = head{allocs.at(int(s)).time, int32(r), s, end}
	}
	less := func(a, b *head) bool { return a.time < b.time || a.time == b.time && a.run < b.run }
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(h) {
				return
			}
			if c+1 < len(h) && less(&h[c+1], &h[c]) {
				c++
			}
			if !less(&h[c], &h[i]) {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	order := make([]int32, 0, n)
	for len(h) > 0 {
		top := &h[0]
		order = append(order, top.pos)
		if top.pos++; top.pos < top.end {
			top.time = allocs.at(int(top.pos)).time
		} else {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
	return order
}
