package portal_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// listRow matches a row of any list page, with its id.
var listRow = regexp.MustCompile(`data-testid="(?:payout|order|customer|event)-row" data-[a-z-]+="([^"]+)"`)

var nextLink = regexp.MustCompile(`<a rel="next" href="([^"]+)"`)

func listRowIDs(page string) []string {
	var ids []string
	for _, m := range listRow.FindAllStringSubmatch(page, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// next returns the page's link to the next page; the test fails without one.
func next(t *testing.T, r *response) string {
	t.Helper()
	m := nextLink.FindStringSubmatch(r.body)
	if m == nil {
		t.Fatalf("%s: no next page:\n%s", r.Request.URL, r.body)
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// Every list page passes the engine's sealed cursor through its query
// string: the next link shows the following rows; a cursor of another
// workspace, of another filter, or a changed one is refused with a 400
// page that shows nothing of the listing, never a 500.
func TestListPagesCarrySealedCursors(t *testing.T) {
	h := newHarness(t)
	acme, other := h.workspace("Acme"), h.workspace("Other")
	for _, w := range []struct{ ws, prefix string }{{acme.Workspace.ID, "acme"}, {other.Workspace.ID, "other"}} {
		for i := range 51 {
			n := strconv.Itoa(i)
			h.fund(w.ws, w.prefix+"-o-"+n, "2.00", w.prefix+"-payer-"+n)
			h.payout(w.ws, w.prefix+"-po-"+n, "1.00", w.prefix+"-payer-"+n)
		}
	}
	a, o := h.browser(), h.browser()
	a.signIn(acme.StaffEmail, acme.StaffPassword)
	o.signIn(other.StaffEmail, other.StaffPassword)

	for _, path := range []string{"/withdrawals?status=submitted", "/payments", "/customers", "/settings/developer"} {
		first := a.get(path).wantStatus(t, http.StatusOK)
		ids := listRowIDs(first.body)
		second := a.get(next(t, first)).wantStatus(t, http.StatusOK)
		more := listRowIDs(second.body)
		if len(ids) != 50 || len(more) == 0 {
			t.Fatalf("%s: pages of %d and %d rows; want 50 and more", path, len(ids), len(more))
		}
		seen := map[string]bool{}
		for _, id := range append(ids, more...) {
			if seen[id] {
				t.Fatalf("%s: row %s on both pages", path, id)
			}
			seen[id] = true
		}

		theirs := next(t, o.get(path).wantStatus(t, http.StatusOK))
		page := a.get(theirs).wantStatus(t, http.StatusBadRequest).wantContains(t, "cursor is not a cursor of this listing")
		if strings.Contains(page.body, "other-") || len(listRowIDs(page.body)) != 0 {
			t.Errorf("%s: another workspace's cursor shows rows:\n%s", path, page.body)
		}

		mine := next(t, first)
		u, err := url.Parse(mine)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		c := q.Get("cursor")
		for _, changed := range []string{c[:len(c)-1], c + "A", strings.ToUpper(c), "1763805600000000.42", "zz"} {
			q.Set("cursor", changed)
			u.RawQuery = q.Encode()
			a.get(u.String()).wantStatus(t, http.StatusBadRequest).wantContains(t, "cursor is not a cursor of this listing")
		}
	}

	// A withdrawals cursor holds only with its filter.
	mine := next(t, a.get("/withdrawals?status=submitted"))
	for _, changed := range []string{
		strings.Replace(mine, "status=submitted", "status=failed", 1),
		strings.Replace(mine, "status=submitted", "q=acme-payer-1", 1),
		strings.Replace(mine, "&status=submitted", "", 1),
	} {
		if changed == mine {
			t.Fatalf("%s was not changed", mine)
		}
		a.get(changed).wantStatus(t, http.StatusBadRequest).wantContains(t, "cursor is not a cursor of this listing")
	}
	// A cursor of one list page is not one of another.
	cursor := strings.SplitN(next(t, a.get("/customers")), "cursor=", 2)[1]
	for _, path := range []string{"/withdrawals", "/payments", "/settings/developer"} {
		a.get(path+"?cursor="+cursor).wantStatus(t, http.StatusBadRequest)
	}

	// A q that no payer_id can be (an invisible character) finds nothing,
	// as any unknown q does.
	page := a.get("/withdrawals?q="+url.QueryEscape("acme-payer-1\u200b")).wantStatus(t, http.StatusOK)
	if rows := listRowIDs(page.body); len(rows) != 0 {
		t.Errorf("q with an invisible character finds %v", rows)
	}
}
