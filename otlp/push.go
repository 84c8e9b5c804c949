package otlp

import (
	"context"
	"fmt"
	"slices"
	"time"

	"nsprof/analyze"
)

// PushOptions configure [Push].
type PushOptions struct {
	// Period cuts the capture into requests of this length from its
	// start; 0 sends the whole capture in one request.
	Period time.Duration
	// Partial sends the samples before the damage of a damaged capture
	// (the damage is then in PushResult.Warnings); by default a damaged
	// capture is an error and nothing is sent.
	Partial bool
	// Attributes are added to every resource of the first request, with
	// the capture's lost samples ([AttrLostSamples]).
	Attributes []Attribute
	// Lost are samples the kernel lost in earlier captures that no
	// request reported (their pushes sent nothing: no samples), added to
	// the capture's own in [AttrLostSamples].
	Lost int64
}

// Attribute is an integer resource attribute.
type Attribute struct {
	Key   string
	Value int64
}

// AttrLostSamples is the resource attribute, on every resource of the
// first request of a capture, of the samples the kernel dropped while
// recording it (its "Lost Samples" counter), when it counted them, plus
// [PushOptions.Lost].
const AttrLostSamples = "nsprof.lost_samples"

// PushResult says what [Push] sent.
type PushResult struct {
	// Requests is the number of requests sent; Periods the number of
	// periods the capture was cut into (periods without samples are not
	// sent).
	Requests, Periods int
	// Samples is the number of stack samples sent, Skipped those of
	// other kinds left out ([Stats.Skipped]); OffCPU the off-CPU time
	// sent, in nanoseconds.
	Samples, Skipped, OffCPU int64
	// Lost is the capture's own lost samples ([AttrLostSamples] without
	// PushOptions.Lost); they and PushOptions.Lost were reported when
	// Requests > 0, not otherwise.
	Lost int64
	// Warnings say what of the capture could not be used.
	Warnings []string
}

// Push sends the stack samples and off-CPU time of the capture at path to
// c ([Encode]), one request per period in time order. A period with
// neither is not sent; a capture with none at all sends nothing, and its
// losses are then not reported (PushResult.Lost says them, for the next
// push's PushOptions.Lost). It stops at the first request that fails,
// returning what was sent before it.
func Push(ctx context.Context, c *Client, path string, o PushOptions) (PushResult, error) {
	var res PushResult
	p, err := analyze.LoadFile(path, analyze.LoadOptions{NoAllocations: true})
	if p == nil || err != nil && !o.Partial {
		return res, err
	}
	if err != nil {
		res.Warnings = append(res.Warnings, err.Error())
	}
	res.Warnings = append(res.Warnings, p.Warnings...)
	periods := cut(time.Duration(p.End-p.Start), o.Period)
	res.Periods = len(periods)
	attrs := o.Attributes
	if p.HasLost || o.Lost > 0 {
		res.Lost = p.Lost
		attrs = append(slices.Clip(attrs), Attribute{AttrLostSamples, p.Lost + o.Lost})
	}
	for i, per := range periods {
		v, err := p.View(analyze.ViewOptions{Filter: analyze.Filter{Since: per.Since, Until: per.Until}, AllKinds: true})
		if err != nil {
			return res, fmt.Errorf("%s: period %d: %w", path, i+1, err)
		}
		profs, st, err := Encode(v, per)
		if err != nil {
			return res, fmt.Errorf("%s: period %d: %w", path, i+1, err)
		}
		res.Skipped += st.Skipped
		if st.Processes == 0 {
			continue
		}
		if res.Requests == 0 {
			for _, rp := range profs.ResourceProfiles().All() {
				for _, a := range attrs {
					rp.Resource().Attributes().PutInt(a.Key, a.Value)
				}
			}
		}
		if err := c.Export(ctx, profs); err != nil {
			return res, fmt.Errorf("%s: period %d of %d (%v from the start): %w", path, i+1, len(periods), per.Since, err)
		}
		res.Requests++
		res.Samples += st.Samples
		res.OffCPU += st.OffCPU
	}
	return res, nil
}

// cut returns the periods of length every that cover a capture of length
// total (the last one until the end), or one period when every is 0 or
// not shorter than total.
func cut(total, every time.Duration) []Period {
	if every <= 0 || every >= total {
		return []Period{{}}
	}
	var out []Period
	for since := time.Duration(0); since < total; since += every {
		until := since + every
		if until >= total {
			until = 0
		}
		out = append(out, Period{Since: since, Until: until})
	}
	return out
}
