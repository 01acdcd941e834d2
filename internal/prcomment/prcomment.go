// Package prcomment keeps sticky comments on a pull request (GitHub) or merge request
// (GitLab): one comment per part of a report, found again on the next run by a marker in its
// body (never by guessing from the most recent comments), edited in place, created the first
// time, and deleted when a later report has fewer parts.
package prcomment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Platform is a code host's comments API.
type Platform struct {
	// Name is "github" or "gitlab".
	Name string
	// API is the API's base URL (https://api.github.com, https://gitlab.example.com/api/v4).
	API string
	// Repo is GitHub's owner/name, or GitLab's project ID or path.
	Repo string
	// Number is the pull request's number, or the merge request's IID.
	Number int
	// Token authenticates (GitHub: a bearer token; GitLab: a private or project token).
	Token string
	// HTTP sends the requests (default: a client with a 30 s timeout).
	HTTP *http.Client
}

// comment is a comment as the APIs list it.
type comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
}

// Result says what Sync did, part by part: "created", "updated", "unchanged", "deleted".
type Result struct {
	Actions []string
}

// marker is the line that names a part: <!-- helm-drift:NAME part N -->.
func marker(name string, part int) string {
	return fmt.Sprintf("<!-- helm-drift:%s part %d -->", name, part)
}

// Sync makes the request's comments marked name hold parts, in order: part i (from 1) edits
// the comment marked with i, or creates it; comments marked with a part beyond len(parts) are
// deleted. A part is never posted over limit characters.
func Sync(ctx context.Context, p Platform, name string, parts []string, limit int) (*Result, error) {
	if p.HTTP == nil {
		p.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if !regexp.MustCompile(`^[A-Za-z0-9._-]+$`).MatchString(name) {
		return nil, fmt.Errorf("marker %q: want letters, digits, '.', '_' or '-'", name)
	}
	existing, err := p.list(ctx)
	if err != nil {
		return nil, err
	}
	re := regexp.MustCompile(`<!-- helm-drift:` + regexp.QuoteMeta(name) + ` part (\d+) -->`)
	byPart := map[int]comment{}
	for _, c := range existing {
		if m := re.FindStringSubmatch(c.Body); m != nil {
			n, _ := strconv.Atoi(m[1])
			if _, dup := byPart[n]; !dup {
				byPart[n] = c
			}
		}
	}
	res := &Result{}
	for i, text := range parts {
		body := strings.TrimRight(text, "\n") + "\n\n" + marker(name, i+1) + "\n"
		if limit > 0 && len(body) > limit {
			return res, fmt.Errorf("part %d is %d characters, over %s's %d: split the report into more comments (--comments)", i+1, len(body), p.Name, limit)
		}
		c, ok := byPart[i+1]
		switch {
		case ok && c.Body == body:
			res.Actions = append(res.Actions, fmt.Sprintf("part %d unchanged (comment %d)", i+1, c.ID))
		case ok:
			if err := p.update(ctx, c.ID, body); err != nil {
				return res, err
			}
			res.Actions = append(res.Actions, fmt.Sprintf("part %d updated (comment %d)", i+1, c.ID))
		default:
			id, err := p.create(ctx, body)
			if err != nil {
				return res, err
			}
			res.Actions = append(res.Actions, fmt.Sprintf("part %d created (comment %d)", i+1, id))
		}
	}
	var stale []int
	for n := range byPart {
		if n > len(parts) {
			stale = append(stale, n)
		}
	}
	sort.Ints(stale)
	for _, n := range stale {
		c := byPart[n]
		{
			if err := p.remove(ctx, c.ID); err != nil {
				return res, err
			}
			res.Actions = append(res.Actions, fmt.Sprintf("part %d deleted (comment %d)", n, c.ID))
		}
	}
	return res, nil
}

// collection is the URL of the request's comments.
func (p Platform) collection() string {
	if p.Name == "gitlab" {
		return fmt.Sprintf("%s/projects/%s/merge_requests/%d/notes", strings.TrimSuffix(p.API, "/"), url.PathEscape(p.Repo), p.Number)
	}
	return fmt.Sprintf("%s/repos/%s/issues/%d/comments", strings.TrimSuffix(p.API, "/"), p.Repo, p.Number)
}

// item is the URL of one comment.
func (p Platform) item(id int64) string {
	if p.Name == "gitlab" {
		return fmt.Sprintf("%s/%d", p.collection(), id)
	}
	return fmt.Sprintf("%s/repos/%s/issues/comments/%d", strings.TrimSuffix(p.API, "/"), p.Repo, id)
}

// list reads every comment of the request, page by page.
func (p Platform) list(ctx context.Context) ([]comment, error) {
	var all []comment
	for page := 1; page <= 100; page++ {
		var got []comment
		if err := p.do(ctx, http.MethodGet, fmt.Sprintf("%s?per_page=100&page=%d", p.collection(), page), nil, &got); err != nil {
			return nil, err
		}
		all = append(all, got...)
		if len(got) < 100 {
			return all, nil
		}
	}
	return all, nil
}

func (p Platform) create(ctx context.Context, body string) (int64, error) {
	var c comment
	err := p.do(ctx, http.MethodPost, p.collection(), map[string]string{"body": body}, &c)
	return c.ID, err
}

func (p Platform) update(ctx context.Context, id int64, body string) error {
	method := http.MethodPatch
	if p.Name == "gitlab" {
		method = http.MethodPut
	}
	return p.do(ctx, method, p.item(id), map[string]string{"body": body}, nil)
}

func (p Platform) remove(ctx context.Context, id int64) error {
	return p.do(ctx, http.MethodDelete, p.item(id), nil, nil)
}

// do sends one request and decodes its JSON answer into out (when set). Errors name the method,
// the URL and the API's answer, never the token.
func (p Platform) do(ctx context.Context, method, u string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if p.Name == "gitlab" {
		req.Header.Set("PRIVATE-TOKEN", p.Token)
	} else {
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("Authorization", "Bearer "+p.Token)
	}
	resp, err := p.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(data))
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, msg)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, u, err)
		}
	}
	return nil
}

// FromEnvironment reads the platform from a CI job's environment: GitHub Actions
// (GITHUB_ACTIONS, GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_TOKEN, the pull request's number
// from GITHUB_EVENT_PATH) or GitLab CI (GITLAB_CI, CI_API_V4_URL, CI_PROJECT_ID,
// CI_MERGE_REQUEST_IID, a token in GITLAB_TOKEN). name forces one ("" reads which), number
// (0: from the environment) the request.
func FromEnvironment(getenv func(string) string, readFile func(string) ([]byte, error), name string, number int) (Platform, error) {
	if name == "" {
		switch {
		case getenv("GITHUB_ACTIONS") != "":
			name = "github"
		case getenv("GITLAB_CI") != "":
			name = "gitlab"
		default:
			return Platform{}, fmt.Errorf("neither GITHUB_ACTIONS nor GITLAB_CI is set: run in a CI job, or give --platform")
		}
	}
	p := Platform{Name: name, Number: number}
	need := func(key string) (string, error) {
		v := getenv(key)
		if v == "" {
			return "", fmt.Errorf("%s is not set", key)
		}
		return v, nil
	}
	var err error
	switch name {
	case "github":
		if p.API = getenv("GITHUB_API_URL"); p.API == "" {
			p.API = "https://api.github.com"
		}
		if p.Repo, err = need("GITHUB_REPOSITORY"); err != nil {
			return p, err
		}
		if p.Token, err = need("GITHUB_TOKEN"); err != nil {
			return p, fmt.Errorf("%w: give the job's token (env: GITHUB_TOKEN: ${{ github.token }}) with pull-requests: write", err)
		}
		if p.Number == 0 {
			path, err := need("GITHUB_EVENT_PATH")
			if err != nil {
				return p, fmt.Errorf("%w: give --pr", err)
			}
			data, err := readFile(path)
			if err != nil {
				return p, fmt.Errorf("GITHUB_EVENT_PATH: %w", err)
			}
			var ev struct {
				Number      int `json:"number"`
				PullRequest struct {
					Number int `json:"number"`
				} `json:"pull_request"`
			}
			if err := json.Unmarshal(data, &ev); err != nil {
				return p, fmt.Errorf("GITHUB_EVENT_PATH: %w", err)
			}
			if p.Number = ev.PullRequest.Number; p.Number == 0 {
				p.Number = ev.Number
			}
			if p.Number == 0 {
				return p, fmt.Errorf("the event (%s) is not a pull request's: run on pull_request, or give --pr", path)
			}
		}
	case "gitlab":
		if p.API, err = need("CI_API_V4_URL"); err != nil {
			return p, err
		}
		if p.Repo, err = need("CI_PROJECT_ID"); err != nil {
			return p, err
		}
		if p.Token, err = need("GITLAB_TOKEN"); err != nil {
			return p, fmt.Errorf("%w: a project access token with the api scope, as a masked CI/CD variable", err)
		}
		if p.Number == 0 {
			iid, err := need("CI_MERGE_REQUEST_IID")
			if err != nil {
				return p, fmt.Errorf("%w: run in a merge request pipeline, or give --pr", err)
			}
			if p.Number, err = strconv.Atoi(iid); err != nil {
				return p, fmt.Errorf("CI_MERGE_REQUEST_IID %q: %w", iid, err)
			}
		}
	default:
		return p, fmt.Errorf("--platform %q: want github or gitlab", name)
	}
	return p, nil
}
