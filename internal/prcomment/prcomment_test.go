package prcomment

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeHost is a code host's comments API in memory (GitHub's or GitLab's routes), for Sync's
// unit test: it checks the token and pages the list as the real APIs do.
type fakeHost struct {
	mu       sync.Mutex
	platform string
	comments []comment
	next     int64
	requests []string
}

func (f *fakeHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method)
	authorized := r.Header.Get("Authorization") == "Bearer t0ken"
	if f.platform == "gitlab" {
		authorized = r.Header.Get("PRIVATE-TOKEN") == "t0ken"
	}
	if !authorized {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	collection := "/repos/org/fleet/issues/7/comments"
	itemPrefix := "/repos/org/fleet/issues/comments/"
	if f.platform == "gitlab" {
		collection = "/projects/org%2Ffleet/merge_requests/7/notes"
		itemPrefix = collection + "/"
	}
	path := r.URL.EscapedPath()
	var in struct{ Body string }
	_ = json.NewDecoder(r.Body).Decode(&in)
	switch {
	case path == collection && r.Method == http.MethodGet:
		per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		lo, hi := min((page-1)*per, len(f.comments)), min(page*per, len(f.comments))
		_ = json.NewEncoder(w).Encode(f.comments[lo:hi])
	case path == collection && r.Method == http.MethodPost:
		f.next++
		c := comment{ID: f.next, Body: in.Body}
		f.comments = append(f.comments, c)
		_ = json.NewEncoder(w).Encode(c)
	case strings.HasPrefix(path, itemPrefix):
		id, _ := strconv.ParseInt(strings.TrimPrefix(path, itemPrefix), 10, 64)
		for i, c := range f.comments {
			if c.ID != id {
				continue
			}
			switch r.Method {
			case http.MethodPatch, http.MethodPut:
				f.comments[i].Body = in.Body
				_ = json.NewEncoder(w).Encode(f.comments[i])
			case http.MethodDelete:
				f.comments = append(f.comments[:i], f.comments[i+1:]...)
				w.WriteHeader(http.StatusNoContent)
			}
			return
		}
		http.NotFound(w, r)
	default:
		http.Error(w, "unexpected "+r.Method+" "+path, http.StatusBadRequest)
	}
}

// TestSync: the parts are created once, found again by their marker among many other comments
// (past the first page), edited only when they changed, and the parts a shorter report no
// longer has are deleted; other comments are left alone. Both platforms.
func TestSync(t *testing.T) {
	for _, platform := range []string{"github", "gitlab"} {
		t.Run(platform, func(t *testing.T) {
			f := &fakeHost{platform: platform}
			for i := range 150 {
				f.next++
				f.comments = append(f.comments, comment{ID: f.next, Body: fmt.Sprintf("a reviewer's comment %d", i)})
			}
			srv := httptest.NewServer(f)
			defer srv.Close()
			p := Platform{Name: platform, API: srv.URL, Repo: "org/fleet", Number: 7, Token: "t0ken"}
			ctx := context.Background()
			res, err := Sync(ctx, p, "tree", []string{"one", "two", "three"}, 65536)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(res.Actions, "; "); got != "part 1 created (comment 151); part 2 created (comment 152); part 3 created (comment 153)" {
				t.Errorf("first run: %s", got)
			}
			for i := range 10 {
				f.next++
				f.comments = append(f.comments, comment{ID: f.next, Body: fmt.Sprintf("a later comment %d", i)})
			}
			res, err = Sync(ctx, p, "tree", []string{"one", "two, changed"}, 65536)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(res.Actions, "; "); got != "part 1 unchanged (comment 151); part 2 updated (comment 152); part 3 deleted (comment 153)" {
				t.Errorf("second run: %s", got)
			}
			if len(f.comments) != 150+2+10 {
				t.Errorf("%d comments, want the 160 others and 2 parts", len(f.comments))
			}
			if _, err := Sync(ctx, p, "tree", []string{strings.Repeat("x", 70000)}, 65536); err == nil || !strings.Contains(err.Error(), "--comments") {
				t.Errorf("a part over the limit: %v, want an error naming --comments", err)
			}
			p.Token = "wrong"
			if _, err := Sync(ctx, p, "tree", []string{"one"}, 65536); err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrong") {
				t.Errorf("a bad token: %v, want the 401 without the token", err)
			}
		})
	}
}

func TestFromEnvironment(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	event := func(string) ([]byte, error) { return []byte(`{"number": 42, "pull_request": {"number": 42}}`), nil }
	p, err := FromEnvironment(env(map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "org/fleet", "GITHUB_TOKEN": "t", "GITHUB_EVENT_PATH": "/e.json"}), event, "", 0)
	if err != nil || p.Name != "github" || p.Number != 42 || p.API != "https://api.github.com" {
		t.Errorf("GitHub: %+v, %v", p, err)
	}
	p, err = FromEnvironment(env(map[string]string{"GITLAB_CI": "true", "CI_API_V4_URL": "https://gl/api/v4", "CI_PROJECT_ID": "12", "CI_MERGE_REQUEST_IID": "5", "GITLAB_TOKEN": "t"}), event, "", 0)
	if err != nil || p.Name != "gitlab" || p.Number != 5 || p.Repo != "12" {
		t.Errorf("GitLab: %+v, %v", p, err)
	}
	if _, err := FromEnvironment(env(map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "org/fleet", "GITHUB_EVENT_PATH": "/e.json"}), event, "", 0); err == nil || !strings.Contains(err.Error(), "GITHUB_TOKEN") {
		t.Errorf("no token: %v, want GITHUB_TOKEN named", err)
	}
	if _, err := FromEnvironment(env(nil), event, "", 0); err == nil {
		t.Error("no CI: want an error")
	}
}
