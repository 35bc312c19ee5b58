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
// a failed or slow source is left out and noted in the trace. It is empty
// when the assistant's policy leaves the live context out: always with
// LiveContextOff, and by default when the conversation has no case and the
// deployment no context source. A source that has nothing to say adds
// nothing, but the facts still go: an empty board is no reason to lose
// today's date ("due tomorrow").
func (e *Engine) liveContext(ctx context.Context, s *state) string {
	policy := s.assistant.LiveContext
	quiet := policy != LiveContextAlways && len(s.caseVals) == 0 && len(e.cfg.Context) == 0
	if policy == LiveContextOff || quiet {
		return ""
	}
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
	var one [1]sourceResult // the common single source: no goroutine, nothing allocated
	results := one[:]
	if len(sources) == 1 {
		results[0] = e.fetchSource(ctx, s, sources[0], caller)
	} else {
		all := make([]sourceResult, len(sources))
		var wg sync.WaitGroup
		for i, src := range sources {
			wg.Go(func() { all[i] = e.fetchSource(ctx, s, src, caller) })
		}
		wg.Wait()
		results = all
	}
	writeSources(&b, sources, results)
	return b.String()
}

// writeSources renders what each source gave, in the sources' order: its
// sections quoted as data, or that it is unavailable.
func writeSources(b *strings.Builder, sources []tool.ContextSource, results []sourceResult) {
	for i, r := range results {
		sections := r.sections
		if r.failed {
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
}

// sourceResult is what one context source gave: its sections, or that it
// failed.
type sourceResult struct {
	sections []tool.ContextSection
	failed   bool
}

// fetchSource asks one source for its sections under ContextTimeout and
// traces the fetch.
func (e *Engine) fetchSource(ctx context.Context, s *state, src tool.ContextSource, caller tool.Caller) sourceResult {
	start := e.cfg.Now()
	cctx, cancel := context.WithTimeout(ctx, e.cfg.ContextTimeout)
	defer cancel()
	sections, err := src.LiveContext(cctx, caller, s.now)
	took := e.cfg.Now().Sub(start)
	note := ""
	if err != nil {
		note = err.Error()
	}
	s.trace.addSource(ContextSourceTrace{Name: src.Name(), DurationMS: took.Milliseconds(), Sections: len(sections), Error: note})
	if err != nil {
		return sourceResult{failed: true}
	}
	return sourceResult{sections: sections}
}

func callerOf(s *state) tool.Caller {
	id := s.in.Identity
	return tool.Caller{TenantID: id.TenantID, UserID: id.UserID, Name: id.Name, Role: id.Role, Timezone: s.loc.String(), Language: s.lang}
}
