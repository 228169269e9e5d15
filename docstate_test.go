package billing_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/billingd/billing"
	"github.com/google/go-cmp/cmp"
)

// The five document states, short, for the state tables of invoices and
// credit notes.
const (
	ip = billing.StatusInProgress
	dr = billing.StatusDraft
	fi = billing.StatusFinal
	se = billing.StatusSent
	vo = billing.StatusVoided
)

// editable are the states in which a document's header, lines and groups
// may change.
var editable = []billing.DocumentStatus{ip, dr}

// stateOp is one operation of a document state table.
type stateOp[D any] struct {
	name    string
	allowed []billing.DocumentStatus
	run     func(e *docEnv, id, lineID, groupID string) error
	// check verifies the side effects of an allowed run.
	check func(t *testing.T, e *docEnv, before, after D)
}

// docFixture is a document in a given state with one line and one empty
// group (added while it was editable).
type docFixture[D any] struct {
	doc                 D
	id, lineID, groupID string
}

// stateTable is the state table of one kind of document: every operation
// in every state. An operation allowed in the state succeeds and passes its
// check; any other answers invalid_state and changes nothing (the snapshot
// before and after are equal).
type stateTable[D any] struct {
	ops      []stateOp[D]
	inState  func(t *testing.T, e *docEnv, st billing.DocumentStatus) docFixture[D]
	snapshot func(t *testing.T, e *docEnv, d D) string // everything an operation could change, as JSON
	reload   func(t *testing.T, e *docEnv, d D) D      // the document as stored after the operation
	// settle runs between the set-up and the operation (nil: nothing).
	settle func(e *docEnv)
	// noop reports the allowed runs that must change nothing (nil: none).
	noop func(op string, st billing.DocumentStatus) bool
}

// run runs the table, a parallel subtest per (operation, state).
func (tt stateTable[D]) run(t *testing.T) {
	t.Helper()
	for _, o := range tt.ops {
		for _, st := range []billing.DocumentStatus{ip, dr, fi, se, vo} {
			allowed := slices.Contains(o.allowed, st)
			name := fmt.Sprintf("%s/%s", o.name, st)
			if !allowed {
				name += "/ErrInvalidState"
			}
			parallelOn(t, name, newDocEnv, func(t *testing.T, e *docEnv) {
				f := tt.inState(t, e, st)
				if tt.settle != nil {
					tt.settle(e)
				}
				before := tt.snapshot(t, e, f.doc)
				err := o.run(e, f.id, f.lineID, f.groupID)
				switch {
				case !allowed && billing.CodeOf(err) != billing.CodeInvalidState:
					t.Fatalf("error %v, want invalid_state", err)
				case allowed && err != nil:
					t.Fatalf("error %v", err)
				}
				if !allowed || (tt.noop != nil && tt.noop(o.name, st)) {
					if diff := cmp.Diff(before, tt.snapshot(t, e, f.doc)); diff != "" {
						t.Errorf("the operation changed the document (-before +after):\n%s", diff)
					}
					return
				}
				o.check(t, e, f.doc, tt.reload(t, e, f.doc))
			})
		}
	}
}

// docTransition is a Service operation that moves a document.
type docTransition[D any] func(ctx context.Context, account, id string) (D, error)

// moveTo takes document id, created as DRAFT (or IN_PROGRESS, when st is),
// to st with the document's own operations.
func moveTo[D any](t *testing.T, e *docEnv, id string, st billing.DocumentStatus, finalize, send, void docTransition[D]) {
	t.Helper()
	var err error
	switch st {
	case fi:
		_, err = finalize(e.ctx, e.acct, id)
	case se:
		_, err = send(e.ctx, e.acct, id)
	case vo:
		_, err = void(e.ctx, e.acct, id)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// transition is the run of a state table row that only moves the document
// with op, a Service method such as (*billing.Service).FinalizeInvoice.
func transition[D any](op func(s *billing.Service, ctx context.Context, account, id string) (D, error)) func(e *docEnv, id, _, _ string) error {
	return func(e *docEnv, id, _, _ string) error {
		_, err := op(e.svc, e.ctx, e.acct, id)
		return err
	}
}

// createStatus is the status to create a document in on the way to st.
func createStatus(st billing.DocumentStatus) billing.DocumentStatus {
	if st == ip {
		return ip
	}
	return dr
}

// sameStatusOf is the check of operations that must leave the status as it
// was.
func sameStatusOf[D any](status func(D) billing.DocumentStatus) func(t *testing.T, e *docEnv, before, after D) {
	return func(t *testing.T, _ *docEnv, before, after D) {
		if status(after) != status(before) {
			t.Errorf("status %s, want %s", status(after), status(before))
		}
	}
}

// docLines are a document kind's line and group operations.
type docLines struct {
	createLine  func(e *docEnv, id string) error
	updateLine  func(e *docEnv, id, lineID string) error
	deleteLine  func(e *docEnv, id, lineID string) error
	createGroup func(e *docEnv, id string) error
	updateGroup func(e *docEnv, id, groupID string) error
	deleteGroup func(e *docEnv, id, groupID string) error
}

// lineOps are the rows of the line and group operations, which every
// document allows only while editable: the gross total after creating a
// line is created, after replacing the fixture's line updated, after
// deleting it 0.00; group changes leave the status.
func lineOps[D any](l docLines, status func(D) billing.DocumentStatus, gross func(D) billing.Decimal, created, updated string) []stateOp[D] {
	grossIs := func(want string) func(t *testing.T, e *docEnv, before, after D) {
		return func(t *testing.T, _ *docEnv, _, after D) {
			if got := gross(after).String(); got != want {
				t.Errorf("gross %s, want %s", got, want)
			}
		}
	}
	same := sameStatusOf(status)
	return []stateOp[D]{
		{"CreateLine", editable, func(e *docEnv, id, _, _ string) error { return l.createLine(e, id) }, grossIs(created)},
		{"UpdateLine", editable, func(e *docEnv, id, lineID, _ string) error { return l.updateLine(e, id, lineID) }, grossIs(updated)},
		{"DeleteLine", editable, func(e *docEnv, id, lineID, _ string) error { return l.deleteLine(e, id, lineID) }, grossIs("0.00")},
		{"CreateGroup", editable, func(e *docEnv, id, _, _ string) error { return l.createGroup(e, id) }, same},
		{"UpdateGroup", editable, func(e *docEnv, id, _, groupID string) error { return l.updateGroup(e, id, groupID) }, same},
		{"DeleteGroup", editable, func(e *docEnv, id, _, groupID string) error { return l.deleteGroup(e, id, groupID) }, same},
	}
}

// errOf is the error of an operation whose result the caller does not need.
func errOf[T any](_ T, err error) error { return err }
