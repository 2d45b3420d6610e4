package chain

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// ErrNoCycle means a history has no completed cycle with that number.
var ErrNoCycle = errors.New("no such cycle in the ledger")

// Memory is a whole history held in memory: a copy of a history kept
// somewhere other than a file (a JetStream store's messages, which are the
// file's lines byte for byte), with what its readers ask of it (acr
// audit, log, report, replay, ledger verify). Its offsets are those the
// same bytes would have in a file.
//
// The cycles are found on first use, by decoding every record once; a
// history whose cycles do not follow each other is damage then, as it is
// for a file's cycle index.
type Memory struct {
	b []byte
	// recs and cycles are built on first use: every record decoded, and
	// for each completed cycle (1, 2, ...) the positions in recs of its
	// first and last record.
	recs   []event.Record
	cycles [][2]int
	built  bool
}

// NewMemory holds the history b (whole lines; a torn last line is left
// out by every reader).
func NewMemory(b []byte) *Memory { return &Memory{b: b} }

// Bytes returns the history's bytes.
func (m *Memory) Bytes() []byte { return m.b }

func (m *Memory) build() error {
	if m.built {
		return nil
	}
	var recs []event.Record
	var cycles [][2]int
	starts := map[int64]int{}
	err := m.Scan(func(r event.Record) error {
		switch r.Event.Type {
		case event.CycleStarted:
			starts[r.Event.CycleSeq] = len(recs)
		case event.CycleCompleted:
			next := int64(len(cycles) + 1)
			s, ok := starts[r.Event.CycleSeq]
			if !ok || r.Event.CycleSeq != next {
				return &DamageError{Offset: r.Offset, Msg: fmt.Sprintf("cycle %d completes out of order", r.Event.CycleSeq)}
			}
			cycles = append(cycles, [2]int{s, len(recs)})
			delete(starts, next)
		}
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return fmt.Errorf("build cycle index: %w", err)
	}
	m.recs, m.cycles, m.built = recs, cycles, true
	return nil
}

// Cycle returns the records of one completed cycle, from its
// persistent.cycle.started to its persistent.cycle.completed; an error
// matching ErrNoCycle if there is none.
func (m *Memory) Cycle(cycle int64) ([]event.Record, error) {
	if err := m.build(); err != nil {
		return nil, err
	}
	if cycle < 1 || cycle > int64(len(m.cycles)) {
		return nil, fmt.Errorf("cycle %d: %w", cycle, ErrNoCycle)
	}
	c := m.cycles[cycle-1]
	return m.recs[c[0] : c[1]+1], nil
}

// CycleCompleted returns a completed cycle's cycle record.
func (m *Memory) CycleCompleted(cycle int64) (event.Record, error) {
	recs, err := m.Cycle(cycle)
	if err != nil {
		return event.Record{}, err
	}
	return recs[len(recs)-1], nil
}

// Prologue returns the records before the first cycle: the run's start,
// with its pinned goal, contract and environment.
func (m *Memory) Prologue() ([]event.Record, error) {
	if err := m.build(); err != nil {
		return nil, err
	}
	for i, r := range m.recs {
		if r.Event.Type == event.CycleStarted {
			return m.recs[:i], nil
		}
	}
	return m.recs, nil
}

// ScanLines calls fn for every committed line, without decoding events.
func (m *Memory) ScanLines(fn func(Line) error) error {
	return ScanLines(bytes.NewReader(m.b), fn)
}

// Scan calls fn for every committed record, decoded.
func (m *Memory) Scan(fn func(event.Record) error) error {
	return Scan(bytes.NewReader(m.b), fn)
}

// ReadAll returns every committed record.
func (m *Memory) ReadAll() ([]event.Record, error) {
	var out []event.Record
	err := m.Scan(func(r event.Record) error { out = append(out, r); return nil })
	return out, err
}

// Verify walks the whole history (see Verify); expect's Offset is a byte
// offset in it.
func (m *Memory) Verify(expect *state.Frontier) (Report, error) {
	return Verify(bytes.NewReader(m.b), int64(len(m.b)), expect, nil)
}
