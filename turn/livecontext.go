package turn

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/arbiterhq/arbiter/tool"
)

// liveContext renders who is speaking and when, then the sections of every
// context source. Sources run in parallel, each bounded by ContextTimeout;
// a failed or slow source is left out and noted in the trace.
func (e *Engine) liveContext(ctx context.Context, s *state) string {
	id := s.in.Identity
	local := s.now.In(s.loc)
	var b strings.Builder
	b.Grow(2048) // a board's open cards fit; built on every turn
	for _, part := range [...]string{"Facts from the server, current as of the next message:\nUser: ", id.Name,
		" (id ", id.UserID, "), role ", id.Role, "\nLocal time: "} {
		b.WriteString(part)
	}
	var when [64]byte
	b.Write(local.AppendFormat(when[:0], "2006-01-02 15:04 Monday"))
	b.WriteString(", time zone ")
	b.WriteString(s.loc.String())
	b.WriteString("\n")
	if len(s.caseVals) > 0 {
		b.WriteString("Case of this conversation:")
		for _, k := range slices.Sorted(maps.Keys(s.caseVals)) {
			b.WriteString(" " + k + "=" + neutralize(s.caseVals[k]))
		}
		b.WriteString("\n")
	}

	sources := e.cfg.Context
	if len(sources) == 0 {
		return b.String()
	}
	caller := callerOf(s)
	results := make([][]tool.ContextSection, len(sources))
	failed := make([]bool, len(sources))
	fetch := func(i int) {
		src := sources[i]
		start := e.cfg.Now()
		cctx, cancel := context.WithTimeout(ctx, e.cfg.ContextTimeout)
		defer cancel()
		sections, err := src.LiveContext(cctx, caller, s.now)
		took := e.cfg.Now().Sub(start)
		results[i] = sections
		note := ""
		if err != nil {
			results[i], failed[i] = nil, true
			note = err.Error()
		}
		s.trace.addSource(ContextSourceTrace{Name: src.Name(), DurationMS: took.Milliseconds(), Sections: len(sections), Error: note})
	}
	if len(sources) == 1 {
		fetch(0) // no goroutine for the common single-source case
	} else {
		var wg sync.WaitGroup
		for i := range sources {
			wg.Go(func() { fetch(i) })
		}
		wg.Wait()
	}
	for i, sections := range results {
		if failed[i] {
			// Said, not silently dropped: the model must not take missing
			// facts for an empty board.
			b.WriteString(sources[i].Name() + ": unavailable right now (do not assume it is empty)\n")
			continue
		}
		if len(sections) == 0 {
			continue
		}
		// What people wrote into the system (card titles, comments) is
		// quoted as data, inside a block it cannot leave.
		b.WriteString(`<context_data source="`)
		b.WriteString(attr(sources[i].Name()))
		b.WriteString("\">\n")
		for _, sec := range sections {
			b.WriteString(neutralize(sec.Title))
			b.WriteString(":\n")
			for _, l := range sec.Lines {
				b.WriteString("- ")
				b.WriteString(neutralize(l))
				b.WriteByte('\n')
			}
		}
		b.WriteString("</context_data>\n")
	}
	return b.String()
}

func callerOf(s *state) tool.Caller {
	id := s.in.Identity
	return tool.Caller{TenantID: id.TenantID, UserID: id.UserID, Name: id.Name, Role: id.Role, Timezone: s.loc.String(), Language: s.lang}
}
