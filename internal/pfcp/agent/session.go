package agent

// This file is long because it is one procedure: session establishment,
// modification and deletion (TS 29.244 clause 7.5), with the builder that
// turns the Create/Update/Remove IEs into the session's rules and the
// causes it answers with; the parts check one another and read best
// together.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"regexp"
	"slices"
	"strconv"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/pfcp"
)

// Session procedures (TS 29.244 clause 6.3): establishment, modification,
// deletion. The session requests of a batch are staged in one transaction
// of the sessions table; if it fails as a whole (a kernel write refused),
// each request is committed alone so one cannot fail the others.

type sessionRequest struct {
	from  netip.AddrPort
	msg   *pfcp.Message
	resp  *pfcp.Message
	usage []Usage // read once, kept across a retry
	read  bool
	// after runs once the change is committed (end markers).
	after []func()
	// seid is the session the request staged a change of (0: none).
	seid uint64
}

// reservations are what the batch's requests allocated before their
// sessions are in the kernel's indexes.
type reservations struct {
	slots map[uint32]bool // of chosen TEIDs (model.Config.TEIDSlot)
	ue    map[netip.Addr]bool
}

// sessions commits a batch; staged is closed once it has been staged (the
// next batch may then take the engine's lock).
func (a *Agent) sessions(reqs []*sessionRequest, staged chan struct{}) {
	open := true
	release := func() {
		if open {
			close(staged)
			open = false
		}
	}
	defer release()
	stage := func(rs []*sessionRequest) error {
		res := &reservations{slots: map[uint32]bool{}, ue: map[netip.Addr]bool{}}
		return a.store.ChangeEntries("sessions", func(tx cube.EntryTx) error {
			for _, r := range rs {
				r.resp, r.after, r.seid = nil, nil, 0
				a.stage(tx, r, res)
			}
			release()
			return nil
		})
	}
	err := stage(reqs)
	if err != nil && len(reqs) > 1 {
		for _, r := range reqs {
			if err := stage([]*sessionRequest{r}); err != nil {
				a.failed(r, err)
			}
			a.finish(r)
		}
		return
	}
	if err != nil {
		a.failed(reqs[0], err)
	}
	for _, r := range reqs {
		a.finish(r)
	}
}

// failed turns a response into the rejection of a change the engine
// refused.
func (a *Agent) failed(r *sessionRequest, err error) {
	a.logf("PFCP %s from %s: %v", r.msg.Type, r.from, err)
	cause := pfcp.CauseSystemFailure
	switch {
	case errors.Is(err, cube.ErrConflict):
		cause = pfcp.CauseRuleFailure
	case errors.Is(err, cube.ErrInvalid), errors.Is(err, cube.ErrForbidden): // full, over its tenant's quota
		cause = pfcp.CauseNoResources
	}
	resp := r.msg.Response(pfcp.CauseIE(cause))
	a.withNodeID(resp)
	if r.resp != nil {
		resp.SEID = r.resp.SEID
	}
	r.resp, r.after = resp, nil
}

func (a *Agent) finish(r *sessionRequest) {
	if r.resp == nil {
		return
	}
	// cached before it is sent: the serve goroutine answers the SMF's
	// next retransmission from the cache while this one runs
	b := a.encode(r.resp)
	a.cache.put(r.from, r.msg.Seq, b)
	a.send(r.from, b)
	for _, f := range r.after {
		f()
	}
}

// ruleError is a request's problem with one rule, answered with a cause,
// the offending IE and the failed rule.
type ruleError struct {
	cause     pfcp.Cause
	offending pfcp.IEType
	kind      uint8 // pfcp.Rule*; 0xff: none
	id        uint32
	msg       string
}

func (e *ruleError) Error() string { return e.msg }

func bad(cause pfcp.Cause, offending pfcp.IEType, kind uint8, id uint32, format string, args ...any) *ruleError {
	return &ruleError{cause: cause, offending: offending, kind: kind, id: id, msg: fmt.Sprintf(format, args...)}
}

const noRule = 0xff

// reject answers a session request with a ruleError.
func (a *Agent) rejectSession(r *sessionRequest, cpSEID uint64, e *ruleError) {
	a.logf("PFCP %s from %s: %s", r.msg.Type, r.from, e.msg)
	ies := pfcp.IEs{pfcp.CauseIE(e.cause)}
	if e.offending != 0 {
		ies = append(ies, pfcp.OffendingIE(e.offending))
	}
	if e.kind != noRule {
		ies = append(ies, pfcp.FailedRuleIE(e.kind, e.id))
	}
	resp := r.msg.Response(ies...)
	a.withNodeID(resp)
	resp.SEID = cpSEID
	r.resp = resp
}

func (a *Agent) stage(tx cube.EntryTx, r *sessionRequest, res *reservations) {
	switch r.msg.Type {
	case pfcp.SessionEstablishmentRequest:
		a.establish(tx, r, res)
	case pfcp.SessionModificationRequest:
		a.modify(tx, r, res)
	case pfcp.SessionDeletionRequest:
		a.delete(tx, r)
	default:
		resp := r.msg.Response(pfcp.CauseIE(pfcp.CauseServiceNotSupported))
		a.withNodeID(resp)
		r.resp = resp
	}
}

// getSession reads a session staged in tx.
func getSession(tx cube.EntryTx, seid uint64) (*model.Session, error) {
	return decodeSession(tx.Get(model.SessionKey(seid)))
}

// readSession reads a session outside a transaction.
func (a *Agent) readSession(seid uint64) (*model.Session, error) {
	return decodeSession(a.store.Entry("sessions", model.SessionKey(seid)))
}

// decodeSession decodes a sessions table entry; nil if there was none.
func decodeSession(raw json.RawMessage, ok bool) (*model.Session, error) {
	if !ok {
		return nil, nil
	}
	var s model.Session
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func (a *Agent) establish(tx cube.EntryTx, r *sessionRequest, res *reservations) {
	m := r.msg
	node, _ := nodeOf(m)
	cp, _ := pfcp.ParseFSEID(m.IEs.Find(pfcp.IEFSEID).Value)
	if a.associated(node.String()) == nil {
		a.rejectSession(r, cp.SEID, bad(pfcp.CauseNoAssociation, 0, noRule, 0, "no association with %s", node))
		return
	}
	if a.isDraining() {
		a.rejectSession(r, cp.SEID, bad(pfcp.CauseNoResources, 0, noRule, 0, "the UPF is draining: no new sessions"))
		return
	}
	cpAddr := cp.IPv4
	if !cpAddr.IsValid() {
		cpAddr = cp.IPv6
	}
	// An SMF re-establishing a session it already has here (it lost our
	// answer, or restarted its procedure) replaces it.
	if old, ok := a.dp.SessionByCP(cpAddr, cp.SEID); ok {
		if _, staged := tx.Get(model.SessionKey(old)); staged {
			_ = tx.Delete(model.SessionKey(old))
		}
	}
	s := &model.Session{SEID: a.newSEID(tx), CPSEID: cp.SEID, CPAddress: cpAddr.String(), Node: node.String()}
	b := &builder{a: a, s: s, res: res}
	if e := b.creates(m.IEs); e != nil {
		a.rejectSession(r, cp.SEID, e)
		return
	}
	if e := b.put(tx); e != nil {
		a.rejectSession(r, cp.SEID, e)
		return
	}
	up := pfcp.FSEID{SEID: s.SEID}
	if l := a.cfg.Listen.Addr(); l.Is4() {
		up.IPv4 = l
	} else {
		up.IPv6 = l
	}
	resp := m.Response(pfcp.CauseIE(pfcp.CauseAccepted), up.IE())
	resp.IEs = append(resp.IEs, b.createdPDRs()...)
	a.withNodeID(resp)
	resp.SEID = cp.SEID
	r.resp, r.seid = resp, s.SEID
}

func (a *Agent) newSEID(tx cube.EntryTx) uint64 {
	for {
		s := rand.Uint64()
		if _, taken := tx.Get(model.SessionKey(s)); s != 0 && !taken {
			return s
		}
	}
}

func (a *Agent) modify(tx cube.EntryTx, r *sessionRequest, res *reservations) {
	m := r.msg
	cur, err := getSession(tx, m.SEID)
	if err != nil || cur == nil {
		a.rejectSession(r, 0, bad(pfcp.CauseSessionNotFound, 0, noRule, 0, "no session %d", m.SEID))
		return
	}
	if ie := m.IEs.Find(pfcp.IEFSEID); ie != nil {
		cp, _ := pfcp.ParseFSEID(ie.Value)
		cur.CPSEID = cp.SEID
		if cp.IPv4.IsValid() {
			cur.CPAddress = cp.IPv4.String()
		} else {
			cur.CPAddress = cp.IPv6.String()
		}
	}
	b := &builder{a: a, s: cur, res: res}
	flags := uint32(0)
	if ie := m.IEs.Find(pfcp.IEPFCPSMReqFlags); ie != nil {
		flags = ie.Flags()
	}
	const drobu, qaurr = 0x01, 0x04
	// Removals first, so an ID can be removed and created again.
	var removedURRs []uint32
	for _, rm := range []struct {
		ie     pfcp.IEType
		k      ruleKind
		remove func(uint32) bool
	}{
		{pfcp.IERemovePDR, pdrRule, func(id uint32) bool { return b.removePDR(uint16(id)) }},
		{pfcp.IERemoveFAR, farRule, b.removeFAR},
		{pfcp.IERemoveQER, qerRule, b.removeQER},
		{pfcp.IERemoveURR, urrRule, b.removeURR},
	} {
		for _, ie := range m.IEs.All(rm.ie) {
			id := rm.k.id(ie.Children)
			if !rm.remove(id) {
				a.rejectSession(r, cur.CPSEID, bad(pfcp.CauseRuleFailure, rm.ie, rm.k.kind, id, "no %s %d", rm.k.name, id))
				return
			}
			if rm.ie == pfcp.IERemoveURR {
				removedURRs = append(removedURRs, id)
			}
		}
	}
	if ie := m.IEs.Find(pfcp.IERemoveBAR); ie != nil {
		id, _ := ie.Children.Find(pfcp.IEBARID).U8()
		b.removeBAR(id)
	}
	if e := b.creates(m.IEs); e != nil {
		a.rejectSession(r, cur.CPSEID, e)
		return
	}
	if e := b.updates(m.IEs); e != nil {
		a.rejectSession(r, cur.CPSEID, e)
		return
	}
	// Reports the response carries: removed URRs (final), queried ones.
	var query []uint32
	for _, ie := range m.IEs.All(pfcp.IEQueryURR) {
		id, _ := ie.Children.Find(pfcp.IEURRID).U32()
		if cur.Urr(id) == nil {
			a.rejectSession(r, cur.CPSEID, bad(pfcp.CauseRuleFailure, pfcp.IEQueryURR, pfcp.RuleURR, id, "no URR %d to query", id))
			return
		}
		query = append(query, id)
	}
	if flags&qaurr != 0 {
		query = nil
		for _, u := range cur.URRs {
			query = append(query, u.ID)
		}
	}
	if flags&drobu != 0 {
		a.dp.DropBuffered(cur.SEID)
	}
	if e := b.put(tx); e != nil {
		a.rejectSession(r, cur.CPSEID, e)
		return
	}
	if !r.read {
		if len(removedURRs) > 0 {
			r.usage = append(r.usage, a.dp.Usage(cur.SEID, removedURRs, pfcp.UsageTERMR)...)
		}
		if len(query) > 0 {
			r.usage = append(r.usage, a.dp.Usage(cur.SEID, query, pfcp.UsageIMMER)...)
		}
		r.read = true
	}
	resp := m.Response(pfcp.CauseIE(pfcp.CauseAccepted))
	resp.IEs = append(resp.IEs, b.createdPDRs()...)
	for _, u := range r.usage {
		resp.IEs = append(resp.IEs, usageIE(pfcp.IEUsageReportSMR, u))
	}
	resp.SEID = cur.CPSEID
	r.resp, r.seid, r.after = resp, cur.SEID, b.after
}

func (a *Agent) delete(tx cube.EntryTx, r *sessionRequest) {
	cur, err := getSession(tx, r.msg.SEID)
	if err != nil || cur == nil {
		a.rejectSession(r, 0, bad(pfcp.CauseSessionNotFound, 0, noRule, 0, "no session %d", r.msg.SEID))
		return
	}
	if !r.read {
		r.usage, r.read = a.dp.Usage(cur.SEID, nil, pfcp.UsageTERMR), true
	}
	if err := tx.Delete(model.SessionKey(cur.SEID)); err != nil {
		a.rejectSession(r, cur.CPSEID, bad(pfcp.CauseSystemFailure, 0, noRule, 0, "%v", err))
		return
	}
	resp := r.msg.Response(pfcp.CauseIE(pfcp.CauseAccepted))
	for _, u := range r.usage {
		resp.IEs = append(resp.IEs, usageIE(pfcp.IEUsageReportSDR, u))
	}
	resp.SEID = cur.CPSEID
	r.resp, r.seid = resp, cur.SEID
}

// builder applies a request's rule IEs to a session.
type builder struct {
	a   *Agent
	s   *model.Session
	res *reservations
	// created are the PDRs whose F-TEID or UE address the UPF chose:
	// the response reports them (Created PDR).
	created []uint16
	after   []func()
}

// fieldRE finds the rule a validation error is about: "pdrs[2].f_teid".
var fieldRE = regexp.MustCompile(`^tables\.sessions\.(pdrs|fars|qers|urrs|bars)\[(\d+)\]`)

// put stages the session; a refusal of the model names the rule at fault.
func (b *builder) put(tx cube.EntryTx) *ruleError {
	// The engine validates the session in place (filling in the F-TEIDs'
	// addresses) and keeps it: the builder only reads it from now on.
	_, err := tx.PutValue(b.s)
	if err != nil {
		e := bad(pfcp.CauseRuleFailure, 0, noRule, 0, "%v", err)
		var fe *cube.FieldError
		if errors.As(err, &fe) {
			if sm := fieldRE.FindStringSubmatch(fe.Field); sm != nil {
				i, _ := strconv.Atoi(sm[2])
				e.kind, e.id = b.ruleAt(sm[1], i)
			}
		}
		return e
	}
	return nil
}

func (b *builder) ruleAt(list string, i int) (uint8, uint32) {
	switch {
	case list == "pdrs" && i < len(b.s.PDRs):
		return pfcp.RulePDR, uint32(b.s.PDRs[i].ID)
	case list == "fars" && i < len(b.s.FARs):
		return pfcp.RuleFAR, b.s.FARs[i].ID
	case list == "qers" && i < len(b.s.QERs):
		return pfcp.RuleQER, b.s.QERs[i].ID
	case list == "urrs" && i < len(b.s.URRs):
		return pfcp.RuleURR, b.s.URRs[i].ID
	case list == "bars" && i < len(b.s.BARs):
		return pfcp.RuleBAR, uint32(b.s.BARs[i].ID)
	}
	return noRule, 0
}

// createdPDRs reports the F-TEIDs and UE addresses the UPF chose.
func (b *builder) createdPDRs() pfcp.IEs {
	var out pfcp.IEs
	for _, id := range b.created {
		p := b.s.Pdr(id)
		if p == nil {
			continue
		}
		ie := pfcp.Group(pfcp.IECreatedPDR, pfcp.U16IE(pfcp.IEPDRID, id))
		if p.FTEID != nil {
			f := pfcp.FTEID{TEID: p.FTEID.TEID}
			if p.FTEID.IPv4 != "" {
				f.IPv4 = netip.MustParseAddr(p.FTEID.IPv4)
			}
			if p.FTEID.IPv6 != "" {
				f.IPv6 = netip.MustParseAddr(p.FTEID.IPv6)
			}
			ie.Children = append(ie.Children, f.IE())
		}
		if p.UEIPv4 != "" || p.UEIPv6 != "" {
			u := pfcp.UEIPAddress{Destination: !p.Uplink()}
			if p.UEIPv4 != "" {
				u.IPv4 = netip.MustParseAddr(p.UEIPv4)
			}
			if p.UEIPv6 != "" {
				u.IPv6 = netip.MustParsePrefix(p.UEIPv6).Addr()
				u.HasPrefixLen, u.PrefixLen = true, 64
			}
			ie.Children = append(ie.Children, u.IE())
		}
		out = append(out, ie)
	}
	return out
}

// ruleKind is what the procedures need of a kind of rule: the IE that
// carries a rule's ID, the Failed Rule ID's type, a name for messages.
type ruleKind struct {
	idIE pfcp.IEType
	kind uint8
	name string
}

var (
	pdrRule = ruleKind{pfcp.IEPDRID, pfcp.RulePDR, "PDR"}
	farRule = ruleKind{pfcp.IEFARID, pfcp.RuleFAR, "FAR"}
	qerRule = ruleKind{pfcp.IEQERID, pfcp.RuleQER, "QER"}
	urrRule = ruleKind{pfcp.IEURRID, pfcp.RuleURR, "URR"}
	barRule = ruleKind{pfcp.IEBARID, pfcp.RuleBAR, "BAR"}
)

// id reads the rule's ID among a grouped IE's children (PDR IDs are two
// octets, BAR IDs one, the others four).
func (k ruleKind) id(ies pfcp.IEs) uint32 {
	ie := ies.Find(k.idIE)
	switch k.kind {
	case pfcp.RulePDR:
		v, _ := ie.U16()
		return uint32(v)
	case pfcp.RuleBAR:
		v, _ := ie.U8()
		return uint32(v)
	}
	v, _ := ie.U32()
	return v
}

// createEach appends the rules of the IEs of type t to list, refusing one
// whose ID the session already has.
func createEach[T any](ies pfcp.IEs, t pfcp.IEType, list *[]T, parse func(pfcp.IEs, *T) (*T, *ruleError),
	id func(*T) uint32, k ruleKind) *ruleError {
	for _, ie := range ies.All(t) {
		v, e := parse(ie.Children, nil)
		if e != nil {
			return e
		}
		n := id(v)
		if slices.ContainsFunc(*list, func(x T) bool { return id(&x) == n }) {
			return bad(pfcp.CauseRuleFailure, k.idIE, k.kind, n, "%s %d exists", k.name, n)
		}
		*list = append(*list, *v)
	}
	return nil
}

// updateEach applies the Update IEs of type t to the rules they name.
func updateEach[T any](ies pfcp.IEs, t pfcp.IEType, k ruleKind, find func(uint32) *T, apply func(ie *pfcp.IE, cur *T) *ruleError) *ruleError {
	for _, ie := range ies.All(t) {
		id := k.id(ie.Children)
		cur := find(id)
		if cur == nil {
			return bad(pfcp.CauseRuleFailure, t, k.kind, id, "no %s %d to update", k.name, id)
		}
		if e := apply(ie, cur); e != nil {
			return e
		}
	}
	return nil
}

// creates adds the Create PDR/FAR/QER/URR/BAR IEs' rules.
func (b *builder) creates(ies pfcp.IEs) *ruleError {
	if e := createEach(ies, pfcp.IECreateFAR, &b.s.FARs, farFrom, func(f *model.FAR) uint32 { return f.ID }, farRule); e != nil {
		return e
	}
	if e := createEach(ies, pfcp.IECreateQER, &b.s.QERs, qerFrom, func(q *model.QER) uint32 { return q.ID }, qerRule); e != nil {
		return e
	}
	if e := createEach(ies, pfcp.IECreateURR, &b.s.URRs, urrFrom, func(u *model.URR) uint32 { return u.ID }, urrRule); e != nil {
		return e
	}
	if ie := ies.Find(pfcp.IECreateBAR); ie != nil {
		bar := barFrom(ie.Children, nil)
		b.removeBAR(bar.ID)
		b.s.BARs = append(b.s.BARs, *bar)
	}
	for _, ie := range ies.All(pfcp.IECreatePDR) {
		id, _ := ie.Children.Find(pfcp.IEPDRID).U16()
		if b.s.Pdr(id) != nil {
			return bad(pfcp.CauseRuleFailure, pfcp.IEPDRID, pfcp.RulePDR, uint32(id), "PDR %d exists", id)
		}
		p := model.PDR{ID: id}
		if e := b.pdrFields(&p, ie.Children, true); e != nil {
			return e
		}
		b.s.PDRs = append(b.s.PDRs, p)
	}
	return nil
}

// updates applies the Update PDR/FAR/QER/URR/BAR IEs.
func (b *builder) updates(ies pfcp.IEs) *ruleError {
	bar := func(id uint32) *model.BAR { return b.s.Bar(uint8(id)) }
	pdr := func(id uint32) *model.PDR { return b.s.Pdr(uint16(id)) }
	barOver := func(ies pfcp.IEs, cur *model.BAR) (*model.BAR, *ruleError) { return barFrom(ies, cur), nil }
	for _, update := range []func() *ruleError{
		func() *ruleError { return updateEach(ies, pfcp.IEUpdateFAR, farRule, b.s.Far, b.updateFAR) },
		func() *ruleError { return updateEach(ies, pfcp.IEUpdateQER, qerRule, b.s.Qer, replacing(qerFrom)) },
		func() *ruleError { return updateEach(ies, pfcp.IEUpdateURR, urrRule, b.s.Urr, replacing(urrFrom)) },
		func() *ruleError { return updateEach(ies, pfcp.IEUpdateBAR, barRule, bar, replacing(barOver)) },
		func() *ruleError {
			return updateEach(ies, pfcp.IEUpdatePDR, pdrRule, pdr, func(ie *pfcp.IE, cur *model.PDR) *ruleError {
				return b.pdrFields(cur, ie.Children, false)
			})
		},
	} {
		if e := update(); e != nil {
			return e
		}
	}
	return nil
}

// replacing applies an update by reading it over the rule.
func replacing[T any](parse func(pfcp.IEs, *T) (*T, *ruleError)) func(*pfcp.IE, *T) *ruleError {
	return func(ie *pfcp.IE, cur *T) *ruleError {
		v, e := parse(ie.Children, cur)
		if e == nil {
			*cur = *v
		}
		return e
	}
}

// updateFAR applies an Update FAR, and asks for an End Marker into the old
// tunnel when the SMF wants one (SNDEM) and the tunnel changes.
func (b *builder) updateFAR(ie *pfcp.IE, cur *model.FAR) *ruleError {
	before := *cur
	f, e := farFrom(ie.Children, cur)
	if e != nil {
		return e
	}
	*cur = *f
	if fp := ie.Children.Find(pfcp.IEUpdateForwardingParameters); fp != nil {
		if fl := fp.Children.Find(pfcp.IEPFCPSMReqFlags); fl != nil && fl.Flags()&0x02 != 0 &&
			before.OuterHeader != nil && before.Port != "" &&
			(cur.OuterHeader == nil || *cur.OuterHeader != *before.OuterHeader) {
			old, port, dp := *before.OuterHeader, before.Port, b.a.dp
			b.after = append(b.after, func() { dp.SendEndMarker(old, port) })
		}
	}
	return nil
}

// removeFrom deletes the rules is picks from list; false if there were none.
func removeFrom[T any](list *[]T, is func(T) bool) bool {
	n := len(*list)
	*list = slices.DeleteFunc(*list, is)
	return len(*list) < n
}

func (b *builder) removePDR(id uint16) bool {
	return removeFrom(&b.s.PDRs, func(p model.PDR) bool { return p.ID == id })
}

func (b *builder) removeFAR(id uint32) bool {
	return removeFrom(&b.s.FARs, func(f model.FAR) bool { return f.ID == id })
}

// removeQER and removeURR also take the rule out of the PDRs that use it.
func (b *builder) removeQER(id uint32) bool {
	for i := range b.s.PDRs {
		removeFrom(&b.s.PDRs[i].QERs, func(x uint32) bool { return x == id })
	}
	return removeFrom(&b.s.QERs, func(q model.QER) bool { return q.ID == id })
}

func (b *builder) removeURR(id uint32) bool {
	for i := range b.s.PDRs {
		removeFrom(&b.s.PDRs[i].URRs, func(x uint32) bool { return x == id })
	}
	return removeFrom(&b.s.URRs, func(u model.URR) bool { return u.ID == id })
}

func (b *builder) removeBAR(id uint8) {
	b.s.BARs = slices.DeleteFunc(b.s.BARs, func(x model.BAR) bool { return x.ID == id })
	for i := range b.s.FARs {
		if f := &b.s.FARs[i]; f.BAR != nil && *f.BAR == id {
			f.BAR = nil
		}
	}
}

var interfaceNames = map[uint8]string{pfcp.InterfaceAccess: "access", pfcp.InterfaceCore: "core", pfcp.InterfaceSGiLAN: "sgi-lan"}

// pdrFields reads a Create PDR's (all) or an Update PDR's (those present)
// IEs into p.
func (b *builder) pdrFields(p *model.PDR, ies pfcp.IEs, create bool) *ruleError {
	id := uint32(p.ID)
	if ie := ies.Find(pfcp.IEPrecedence); ie != nil {
		p.Precedence, _ = ie.U32()
	}
	if ie := ies.Find(pfcp.IEOuterHeaderRemoval); ie != nil {
		switch v, _ := ie.U8(); v {
		case pfcp.OHRGTPUUDPIPv4, pfcp.OHRGTPUUDPIPv6, pfcp.OHRGTPUUDPIP:
			p.OuterHeaderRemoval = "gtp-u"
		default:
			return bad(pfcp.CauseServiceNotSupported, pfcp.IEOuterHeaderRemoval, pfcp.RulePDR, id, "outer header removal %d is not supported (GTP-U only)", v)
		}
	}
	if ie := ies.Find(pfcp.IEFARID); ie != nil {
		p.FAR, _ = ie.U32()
	} else if create {
		return bad(pfcp.CauseConditionalIEMissing, pfcp.IEFARID, pfcp.RulePDR, id, "PDR %d has no FAR", id)
	}
	if urrs := ies.All(pfcp.IEURRID); len(urrs) > 0 || create {
		p.URRs = nil
		for _, ie := range urrs {
			v, _ := ie.U32()
			p.URRs = append(p.URRs, v)
		}
	}
	if qers := ies.All(pfcp.IEQERID); len(qers) > 0 || create {
		p.QERs = nil
		for _, ie := range qers {
			v, _ := ie.U32()
			p.QERs = append(p.QERs, v)
		}
	}
	if len(ies.All(pfcp.IEActivatePredefinedRules)) > 0 {
		return bad(pfcp.CauseUnknownPredefinedRule, pfcp.IEActivatePredefinedRules, pfcp.RulePDR, id, "the UPF has no pre-defined rules")
	}
	pdi := ies.Find(pfcp.IEPDI)
	if pdi == nil {
		return nil
	}
	return b.pdi(p, pdi.Children)
}

// pdi reads a PDI (replacing the PDR's previous one).
func (b *builder) pdi(p *model.PDR, ies pfcp.IEs) *ruleError {
	id := uint32(p.ID)
	src, _ := ies.Find(pfcp.IESourceInterface).U8()
	name, ok := interfaceNames[src&0x0f]
	if !ok {
		return bad(pfcp.CauseServiceNotSupported, pfcp.IESourceInterface, pfcp.RulePDR, id, "source interface %d is not supported", src&0x0f)
	}
	prevTEID := p.FTEID
	p.Source, p.FTEID, p.UEIPv4, p.UEIPv6, p.SDF, p.QFI, p.NetworkInstance = name, nil, "", "", nil, nil, ""
	if ie := ies.Find(pfcp.IENetworkInstance); ie != nil {
		p.NetworkInstance = pfcp.DecodeAPN(ie.Value)
	}
	if ies.Find(pfcp.IEApplicationID) != nil {
		return bad(pfcp.CauseUnknownApplicationID, pfcp.IEApplicationID, pfcp.RulePDR, id, "application detection is not supported")
	}
	if ies.Find(pfcp.IETrafficEndpointID) != nil {
		return bad(pfcp.CauseServiceNotSupported, pfcp.IETrafficEndpointID, pfcp.RulePDR, id, "traffic endpoints are not supported")
	}
	if ie := ies.Find(pfcp.IEFTEID); ie != nil {
		f, _ := pfcp.ParseFTEID(ie.Value)
		t, e := b.fteid(p, f, prevTEID)
		if e != nil {
			return e
		}
		p.FTEID = t
	}
	for _, ie := range ies.All(pfcp.IEUEIPAddress) {
		u, _ := pfcp.ParseUEIPAddress(ie.Value)
		if e := b.ueAddr(p, u); e != nil {
			return e
		}
	}
	for _, ie := range ies.All(pfcp.IESDFFilter) {
		f, _ := pfcp.ParseSDFFilter(ie.Value)
		s := model.SDF{FlowDescription: f.FlowDescription}
		if f.HasToS {
			s.ToS = &model.ToS{Value: f.ToS, Mask: f.ToSMask}
		}
		s.SPI, s.FlowLabel = present(f.HasSPI, f.SPI), present(f.HasFlowLabel, f.FlowLabel)
		if f.HasFilterID {
			s.ID = f.FilterID
		}
		p.SDF = append(p.SDF, s)
	}
	for _, ie := range ies.All(pfcp.IEQFI) {
		q, _ := ie.U8()
		p.QFI = append(p.QFI, q&0x3f)
	}
	return nil
}

// fteid resolves a PDI's F-TEID: one the SMF gives, or one the UPF
// chooses (shared by the session's PDRs that give the same CHOOSE ID).
func (b *builder) fteid(p *model.PDR, f pfcp.FTEID, prev *model.FTEID) (*model.FTEID, *ruleError) {
	id := uint32(p.ID)
	port := model.PortN3
	if p.Source != "access" {
		if _, ok := b.a.cfg.Tunnels[model.PortN9]; ok {
			port = model.PortN9
		}
	}
	addrs, ok := b.a.cfg.Tunnels[port]
	if !f.Choose {
		if _, chosen := b.a.cfg.Settings.TEIDSlot(f.TEID); chosen && !b.hasTEID(f.TEID) && (prev == nil || prev.TEID != f.TEID) {
			base, n := b.a.cfg.Settings.ChosenTEIDs()
			return nil, bad(pfcp.CauseRuleFailure, pfcp.IEFTEID, pfcp.RulePDR, id,
				"TEID %#x is in the range the UPF chooses from (%#x-%#x) and not this session's: ask for CHOOSE, or give a TEID below %#x",
				f.TEID, base, base+n-1, base)
		}
		t := &model.FTEID{TEID: f.TEID}
		if f.IPv4.IsValid() {
			t.IPv4 = f.IPv4.String()
		}
		if f.IPv6.IsValid() {
			t.IPv6 = f.IPv6.String()
		}
		return t, nil
	}
	if !ok {
		return nil, bad(pfcp.CauseNoResources, pfcp.IEFTEID, pfcp.RulePDR, id, "the UPF has no %s port for tunnels", port)
	}
	t := &model.FTEID{}
	if f.ChooseV4 {
		if !addrs[0].IsValid() {
			return nil, bad(pfcp.CauseInvalidFTEIDAllocation, pfcp.IEFTEID, pfcp.RulePDR, id, "port %s has no IPv4 address", port)
		}
		t.IPv4 = addrs[0].String()
	}
	if f.ChooseV6 {
		if !addrs[1].IsValid() {
			return nil, bad(pfcp.CauseInvalidFTEIDAllocation, pfcp.IEFTEID, pfcp.RulePDR, id, "port %s has no IPv6 address", port)
		}
		t.IPv6 = addrs[1].String()
	}
	if f.HasChooseID {
		cid := f.ChooseID
		t.ChooseID = &cid
		for _, o := range b.s.PDRs {
			if o.FTEID != nil && o.FTEID.ChooseID != nil && *o.FTEID.ChooseID == cid {
				t.TEID = o.FTEID.TEID
				t.IPv4, t.IPv6 = o.FTEID.IPv4, o.FTEID.IPv6
				return t, nil
			}
		}
	}
	if prev != nil && prev.TEID != 0 { // an Update PDR keeps its tunnel
		t.TEID = prev.TEID
		return t, nil
	}
	teid, ok := b.a.allocTEID(b.res)
	if !ok {
		return nil, bad(pfcp.CauseNoResources, pfcp.IEFTEID, pfcp.RulePDR, id, "all %d TEIDs the UPF chooses are in use (range %s)",
			b.a.chosenCapacity(), b.a.cfg.Settings.TEIDRange)
	}
	t.TEID = teid
	b.created = append(b.created, p.ID)
	return t, nil
}

// hasTEID reports whether another PDR of the session has the TEID (one
// the UPF chose for it, which the SMF may give back without CHOOSE).
func (b *builder) hasTEID(teid uint32) bool {
	for _, o := range b.s.PDRs {
		if o.FTEID != nil && o.FTEID.TEID == teid {
			return true
		}
	}
	return false
}

// allocTEID chooses a TEID whose slot is free, going through the chosen
// range in order: its low bits name the slot, its high bits count how often
// the cursor went round the slots, so a slot freed and taken again gets
// another TEID (a stale one misses in the fast path).
func (a *Agent) allocTEID(res *reservations) (uint32, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	base, n := a.cfg.Settings.ChosenTEIDs()
	for range min(n, a.cfg.Settings.TEIDSlots()) {
		t := a.teidNext
		a.teidNext++
		if a.teidNext-base >= n {
			a.teidNext = base
		}
		sl, _ := a.cfg.Settings.TEIDSlot(t)
		if res.slots[sl] || a.dp.TEIDInUse(t) {
			continue
		}
		res.slots[sl] = true
		return t, true
	}
	return 0, false
}

// ueAddr reads a PDI's UE IP Address: given by the SMF, or chosen from the
// cube's pools (one address per session and family, shared by its PDRs).
func (b *builder) ueAddr(p *model.PDR, u pfcp.UEIPAddress) *ruleError {
	id := uint32(p.ID)
	if u.IPv4.IsValid() {
		p.UEIPv4 = u.IPv4.String()
	}
	if u.IPv6.IsValid() {
		p.UEIPv6 = netip.PrefixFrom(u.IPv6, 64).Masked().String()
	}
	for _, fam := range []struct {
		choose bool
		v4     bool
		dst    *string
	}{{u.ChooseV4, true, &p.UEIPv4}, {u.ChooseV6, false, &p.UEIPv6}} {
		if !fam.choose {
			continue
		}
		if a := b.sessionUE(fam.v4); a != "" {
			*fam.dst = a
		} else {
			a, ok := b.a.allocUE(fam.v4, p.NetworkInstance, b.res)
			if !ok {
				return bad(pfcp.CauseAllDynamicAddressesOccupied, pfcp.IEUEIPAddress, pfcp.RulePDR, id, "no free UE address in the pools")
			}
			*fam.dst = a
		}
		if !slices.Contains(b.created, p.ID) {
			b.created = append(b.created, p.ID)
		}
	}
	return nil
}

// sessionUE is the UE address of the session's other PDRs, if any.
func (b *builder) sessionUE(v4 bool) string {
	for _, o := range b.s.PDRs {
		if v4 && o.UEIPv4 != "" {
			return o.UEIPv4
		}
		if !v4 && o.UEIPv6 != "" {
			return o.UEIPv6
		}
	}
	return ""
}

// allocUE picks a free UE address (an IPv4 address, or an IPv6 /64) from
// the pools of the network instance.
func (a *Agent) allocUE(v4 bool, ni string, res *reservations) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, pool := range a.cfg.Settings.UEPools {
		pf := netip.MustParsePrefix(pool.Prefix)
		if pf.Addr().Is4() != v4 || (pool.NetworkInstance != "" && ni != "" && pool.NetworkInstance != ni) {
			continue
		}
		var size uint64
		if v4 {
			size = 1<<(32-pf.Bits()) - 2 // no network or broadcast address
		} else {
			size = 1 << min(63, 64-pf.Bits())
		}
		for range min(size, 65536) {
			n := a.ueNext[i] % size
			a.ueNext[i] = n + 1
			var addr netip.Addr
			var s string
			if v4 {
				b := pf.Addr().As4()
				v := binary.BigEndian.Uint32(b[:]) + uint32(n) + 1
				binary.BigEndian.PutUint32(b[:], v)
				addr = netip.AddrFrom4(b)
				s = addr.String()
			} else {
				b := pf.Addr().As16()
				v := binary.BigEndian.Uint64(b[:8]) + n
				binary.BigEndian.PutUint64(b[:8], v)
				addr = netip.AddrFrom16(b)
				s = netip.PrefixFrom(addr, 64).String()
			}
			if res.ue[addr] || a.dp.UEAddrInUse(addr) {
				continue
			}
			res.ue[addr] = true
			return s, true
		}
	}
	return "", false
}

// farFrom reads a Create FAR (cur nil) or applies an Update FAR to cur.
func farFrom(ies pfcp.IEs, cur *model.FAR) (*model.FAR, *ruleError) {
	f := &model.FAR{}
	if cur != nil {
		*f = *cur
		if cur.OuterHeader != nil {
			oh := *cur.OuterHeader
			f.OuterHeader = &oh
		}
		if cur.Duplicate != nil {
			d := *cur.Duplicate
			if d.OuterHeader != nil {
				oh := *d.OuterHeader
				d.OuterHeader = &oh
			}
			f.Duplicate = &d
		}
	}
	f.ID, _ = ies.Find(pfcp.IEFARID).U32()
	if ie := ies.Find(pfcp.IEApplyAction); ie != nil {
		v := uint16(ie.Flags())
		f.Action = nil
		for _, x := range []struct {
			bit  uint16
			name string
		}{{pfcp.ActionFORW, "forw"}, {pfcp.ActionDROP, "drop"}, {pfcp.ActionBUFF, "buff"}, {pfcp.ActionNOCP, "nocp"}, {pfcp.ActionDUPL, "dupl"}} {
			if v&x.bit != 0 {
				f.Action = append(f.Action, x.name)
			}
		}
		if v&pfcp.ActionDUPL == 0 {
			f.Duplicate = nil
		}
		if v&(pfcp.ActionIPMA|pfcp.ActionIPMD) != 0 {
			return nil, bad(pfcp.CauseServiceNotSupported, pfcp.IEApplyAction, pfcp.RuleFAR, f.ID, "IP multicast is not supported")
		}
	}
	if e := duplicateFrom(ies, f); e != nil {
		return nil, e
	}
	if ie := ies.Find(pfcp.IEBARID); ie != nil {
		v, _ := ie.U8()
		f.BAR = &v
	}
	fp := ies.Find(pfcp.IEForwardingParameters)
	if fp == nil {
		fp = ies.Find(pfcp.IEUpdateForwardingParameters)
	}
	if fp == nil {
		return f, nil
	}
	p := fp.Children
	if ie := p.Find(pfcp.IEDestinationInterface); ie != nil {
		v, _ := ie.U8()
		name, ok := interfaceNames[v&0x0f]
		if !ok {
			return nil, bad(pfcp.CauseServiceNotSupported, pfcp.IEDestinationInterface, pfcp.RuleFAR, f.ID, "destination interface %d is not supported", v&0x0f)
		}
		f.Destination = name
		f.Port = "" // derived again from the destination
	}
	if ie := p.Find(pfcp.IENetworkInstance); ie != nil {
		f.NetworkInstance = pfcp.DecodeAPN(ie.Value)
	}
	if ie := p.Find(pfcp.IEOuterHeaderCreation); ie != nil {
		o, _ := pfcp.ParseOuterHeaderCreation(ie.Value)
		if !o.GTPU() {
			return nil, bad(pfcp.CauseServiceNotSupported, pfcp.IEOuterHeaderCreation, pfcp.RuleFAR, f.ID, "only GTP-U outer headers are supported")
		}
		addr := o.IPv4
		if !addr.IsValid() {
			addr = o.IPv6
		}
		f.OuterHeader = &model.OuterHeader{TEID: o.TEID, Address: addr.String()}
		f.Port = ""
	}
	if ie := p.Find(pfcp.IETransportLevelMarking); ie != nil && len(ie.Value) >= 2 {
		tos := ie.Value[0] & ie.Value[1]
		f.ToS = &tos
	}
	if p.Find(pfcp.IEForwardingPolicy) != nil {
		return nil, bad(pfcp.CauseInvalidForwardingPolicy, pfcp.IEForwardingPolicy, pfcp.RuleFAR, f.ID, "forwarding policies are not supported")
	}
	if p.Find(pfcp.IERedirectInformation) != nil || p.Find(pfcp.IEHeaderEnrichment) != nil {
		return nil, bad(pfcp.CauseServiceNotSupported, pfcp.IERedirectInformation, pfcp.RuleFAR, f.ID, "redirection and header enrichment are not supported")
	}
	if ie := p.Find(pfcp.IEInterfaceType3GPP); ie != nil {
		if v, _ := ie.U8(); v&0x3f == 15 { // N9
			f.Port = model.PortN9
		}
	}
	return f, nil
}

// duplicateFrom reads a Create FAR's Duplicating Parameters or applies an
// Update FAR's Update Duplicating Parameters to f.Duplicate. One
// destination per FAR: the fast path makes one copy.
func duplicateFrom(ies pfcp.IEs, f *model.FAR) *ruleError {
	t := pfcp.IEDuplicatingParameters
	all := ies.All(t)
	if len(all) == 0 {
		t = pfcp.IEUpdateDuplicatingParameters
		all = ies.All(t)
	}
	if len(all) == 0 {
		return nil
	}
	if len(all) > 1 {
		return bad(pfcp.CauseServiceNotSupported, t, pfcp.RuleFAR, f.ID, "%d duplicating destinations: the upf makes one copy per FAR", len(all))
	}
	d := f.Duplicate
	if d == nil || t == pfcp.IEDuplicatingParameters {
		d = &model.Duplicate{}
	}
	p := all[0].Children
	if ie := p.Find(pfcp.IEDestinationInterface); ie != nil {
		v, _ := ie.U8()
		name, ok := interfaceNames[v&0x0f]
		if v&0x0f == pfcp.InterfaceLI {
			name, ok = "li-function", true
		}
		if !ok {
			return bad(pfcp.CauseServiceNotSupported, pfcp.IEDestinationInterface, pfcp.RuleFAR, f.ID, "duplicating to interface %d is not supported", v&0x0f)
		}
		d.Destination, d.Port = name, ""
	}
	if ie := p.Find(pfcp.IEOuterHeaderCreation); ie != nil {
		o, _ := pfcp.ParseOuterHeaderCreation(ie.Value)
		if !o.GTPU() {
			return bad(pfcp.CauseServiceNotSupported, pfcp.IEOuterHeaderCreation, pfcp.RuleFAR, f.ID, "only GTP-U outer headers are supported for copies")
		}
		addr := o.IPv4
		if !addr.IsValid() {
			addr = o.IPv6
		}
		d.OuterHeader, d.Port = &model.OuterHeader{TEID: o.TEID, Address: addr.String()}, ""
	}
	if ie := p.Find(pfcp.IETransportLevelMarking); ie != nil && len(ie.Value) >= 2 {
		tos := ie.Value[0] & ie.Value[1]
		d.ToS = &tos
	}
	if p.Find(pfcp.IEForwardingPolicy) != nil {
		return bad(pfcp.CauseInvalidForwardingPolicy, pfcp.IEForwardingPolicy, pfcp.RuleFAR, f.ID, "forwarding policies are not supported")
	}
	f.Duplicate = d
	return nil
}

// present is v when the IE has it (has), else nil.
func present[T any](has bool, v T) *T {
	if !has {
		return nil
	}
	return &v
}

// edited is a copy of cur to change (a new rule when cur is nil).
func edited[T any](cur *T) *T {
	v := new(T)
	if cur != nil {
		*v = *cur
	}
	return v
}

// qerFrom reads a Create QER or applies an Update QER.
func qerFrom(ies pfcp.IEs, cur *model.QER) (*model.QER, *ruleError) {
	q := edited(cur)
	q.ID, _ = ies.Find(pfcp.IEQERID).U32()
	if ie := ies.Find(pfcp.IEGateStatus); ie != nil {
		v, _ := ie.U8()
		gate := func(x uint8) string {
			if x == 0 {
				return "open"
			}
			return "closed"
		}
		q.GateUL, q.GateDL = gate(v>>2&3), gate(v&3)
	}
	if ie := ies.Find(pfcp.IEMBR); ie != nil {
		r, err := pfcp.ParseBitRate(ie.Value)
		if err != nil {
			return nil, bad(pfcp.CauseMandatoryIEIncorrect, pfcp.IEMBR, pfcp.RuleQER, q.ID, "%v", err)
		}
		q.MBRUL, q.MBRDL = r.Uplink, r.Downlink
	}
	if ie := ies.Find(pfcp.IEGBR); ie != nil {
		r, _ := pfcp.ParseBitRate(ie.Value)
		q.GBRUL, q.GBRDL = r.Uplink, r.Downlink
	}
	if ie := ies.Find(pfcp.IEQFI); ie != nil {
		v, _ := ie.U8()
		q.QFI = v & 0x3f
	}
	if ie := ies.Find(pfcp.IEQERCorrelationID); ie != nil {
		q.CorrelationID, _ = ie.U32()
	}
	return q, nil
}

// urrFrom reads a Create URR or applies an Update URR.
func urrFrom(ies pfcp.IEs, cur *model.URR) (*model.URR, *ruleError) {
	u := edited(cur)
	u.ID, _ = ies.Find(pfcp.IEURRID).U32()
	if ie := ies.Find(pfcp.IEMeasurementMethod); ie != nil {
		v, _ := ie.U8()
		u.Measure = nil
		if v&pfcp.MeasureVOLUM != 0 {
			u.Measure = append(u.Measure, "volume")
		}
		if v&pfcp.MeasureDURAT != 0 {
			u.Measure = append(u.Measure, "duration")
		}
		if len(u.Measure) == 0 {
			return nil, bad(pfcp.CauseServiceNotSupported, pfcp.IEMeasurementMethod, pfcp.RuleURR, u.ID, "event measurement is not supported")
		}
	}
	if ie := ies.Find(pfcp.IEReportingTriggers); ie != nil {
		v := ie.Flags()
		u.Triggers = nil
		for _, t := range []struct {
			bit  uint32
			name string
		}{{pfcp.TriggerPERIO, "periodic"}, {pfcp.TriggerVOLTH, "volume_threshold"}, {pfcp.TriggerTIMTH, "time_threshold"},
			{pfcp.TriggerVOLQU, "volume_quota"}, {pfcp.TriggerTIMQU, "time_quota"}} {
			if v&t.bit != 0 {
				u.Triggers = append(u.Triggers, t.name)
			}
		}
	}
	if ie := ies.Find(pfcp.IEMeasurementPeriod); ie != nil {
		u.Period, _ = ie.U32()
	}
	volume := func(t pfcp.IEType, dst **model.Volume) {
		ie := ies.Find(t)
		if ie == nil {
			return
		}
		v, _ := pfcp.ParseVolume(ie.Value)
		*dst = &model.Volume{Total: present(v.HasTotal, v.Total), Uplink: present(v.HasUplink, v.Uplink),
			Downlink: present(v.HasDownlink, v.Downlink)}
	}
	volume(pfcp.IEVolumeThreshold, &u.VolumeThreshold)
	volume(pfcp.IEVolumeQuota, &u.VolumeQuota)
	if ie := ies.Find(pfcp.IETimeThreshold); ie != nil {
		u.TimeThreshold, _ = ie.U32()
	}
	if ie := ies.Find(pfcp.IETimeQuota); ie != nil {
		u.TimeQuota, _ = ie.U32()
	}
	return u, nil
}

// barFrom reads a Create BAR or applies an Update BAR.
func barFrom(ies pfcp.IEs, cur *model.BAR) *model.BAR {
	b := edited(cur)
	b.ID, _ = ies.Find(pfcp.IEBARID).U8()
	if ie := ies.Find(pfcp.IESuggestedBufferingPackets); ie != nil {
		b.SuggestedPackets, _ = ie.U8()
	}
	return b
}

// usageIE encodes a usage report of type t (the message's variant).
func usageIE(t pfcp.IEType, u Usage) *pfcp.IE {
	ie := pfcp.Group(t, pfcp.U32IE(pfcp.IEURRID, u.URR), pfcp.U32IE(pfcp.IEURSEQN, u.SEQN),
		pfcp.FlagsIE(pfcp.IEUsageReportTrigger, u.Trigger, 3),
		pfcp.TimeIE(pfcp.IEStartTime, u.Start), pfcp.TimeIE(pfcp.IEEndTime, u.End))
	if v := u.Volume; v != nil {
		ie.Children = append(ie.Children, pfcp.Volume{
			HasTotal: true, Total: v.ULBytes + v.DLBytes, HasUplink: true, Uplink: v.ULBytes, HasDownlink: true, Downlink: v.DLBytes,
			HasTotalPkts: true, TotalPkts: v.ULPkts + v.DLPkts, HasUplinkPkts: true, UplinkPkts: v.ULPkts,
			HasDownlinkPkts: true, DownlinkPkts: v.DLPkts,
		}.IE(pfcp.IEVolumeMeasurement))
	}
	if u.Duration != nil {
		ie.Children = append(ie.Children, pfcp.U32IE(pfcp.IEDurationMeasurement, *u.Duration))
	}
	return ie
}
