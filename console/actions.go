package console

import "context"

// pageAction is a confirmed action of a record's page (an invoice's, a
// schedule's): its button, the words of its confirmation, when the record
// allows it, and run, the Service call made once it is confirmed (at most
// once per form, through submit).
type pageAction[R any] struct {
	label, heading, question, button, done string
	danger                                 bool
	allowed                                func(R) bool
	run                                    func(ctx context.Context, rq *request, rec R) (any, error)
}

// actionOptions returns the buttons of the actions of order that rec
// allows, in that order.
func actionOptions[R any](actions map[string]pageAction[R], order []string, rec R) []option {
	var out []option
	for _, name := range order {
		if actions[name].allowed(rec) {
			out = append(out, option{name, actions[name].label})
		}
	}
	return out
}

// requestedAction returns the action the request's path names (notFound
// when there is none) and the record of the path's id, read with get.
func requestedAction[R any](rq *request, actions map[string]pageAction[R], get func(context.Context, string, string) (R, error)) (pageAction[R], R, error) {
	var rec R
	a, ok := actions[rq.r.PathValue("action")]
	if !ok {
		return a, rec, notFound
	}
	rec, err := get(rq.ctx, rq.account, rq.r.PathValue("id"))
	return a, rec, err
}

// confirm shows the action's confirmation for rec (GET) or does it
// (POST): page is the record's page and title its name; prepare, when
// set, adds fields to the confirmation or changes its question first.
func (a pageAction[R]) confirm(rq *request, rec R, page, title string, prepare func(*confirmation) error) error {
	cf := confirmation{Heading: a.heading + " · " + title, Question: a.question, Action: page + "/" + rq.r.PathValue("action"),
		Button: a.button, Danger: a.danger, Back: page}
	if prepare != nil {
		if err := prepare(&cf); err != nil {
			return err
		}
	}
	return rq.submit(cf, a.done, func(ctx context.Context) (any, error) { return a.run(ctx, rq, rec) })
}
