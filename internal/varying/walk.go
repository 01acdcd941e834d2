package varying

import (
	"strings"
	"text/template/parse"
)

// parseTemplate parses text as Helm's engine does (a file) or as its tpl does (checked: every
// function known, every variable declared).
func parseTemplate(name, text string, file bool) (map[string]*parse.Tree, error) {
	trees := map[string]*parse.Tree{}
	t := parse.New(name)
	if file {
		t.Mode = parse.SkipFuncCheck
	}
	if _, err := t.Parse(text, "", "", trees, parseFuncs); err != nil {
		return nil, err
	}
	if trees[name] == nil {
		trees[name] = &parse.Tree{Name: name, Root: &parse.ListNode{}}
	}
	return trees, nil
}

// walk reads what tree does itself.
func walk(tree *parse.Tree) *node {
	n := &node{}
	// The variables' values (nil: an element of a range), and the maps set and merge change:
	// whether those are the template's own is known once every variable is read.
	values := map[string][]*parse.PipeNode{}
	type target struct {
		changed parse.Node // the map set or merge changes
		deep    bool
	}
	var targets []target
	var visit func(x parse.Node, parent string)
	// visitPipe visits p's commands; each is given the function its result goes to: the next
	// command's, or for the last, parent.
	visitPipe := func(p *parse.PipeNode, parent string) {
		if p == nil {
			return
		}
		for _, v := range p.Decl {
			values[v.Ident[0]] = append(values[v.Ident[0]], p)
		}
		for i, c := range p.Cmds {
			next := parent
			if i+1 < len(p.Cmds) {
				next = commandName(p.Cmds[i+1])
			}
			visit(c, next)
		}
	}
	// branch visits an if, range or with: its pipeline, then its lists.
	branch := func(b *parse.BranchNode) {
		visitPipe(b.Pipe, "")
		visit(b.List, "")
		visit(b.ElseList, "")
	}
	call := func(name, parent string) {
		switch {
		case name == "include" || name == "tpl" || name == "":
		case storing[name]:
			// set and merge take their target as a command's first argument; checked below
		case (name == "keys" || name == "values") && ordering[parent]:
			// their order does not show
		case !steady[name] && n.varies == "":
			n.varies = name
		}
	}
	visit = func(x parse.Node, parent string) {
		switch x := x.(type) {
		case *parse.ListNode:
			if x == nil {
				return
			}
			for _, c := range x.Nodes {
				visit(c, "")
			}
		case *parse.ActionNode:
			visitPipe(x.Pipe, "")
		case *parse.IfNode:
			branch(&x.BranchNode)
		case *parse.RangeNode:
			if x.Pipe != nil {
				for _, v := range x.Pipe.Decl {
					values[v.Ident[0]] = append(values[v.Ident[0]], nil) // an element of what is ranged over
				}
			}
			branch(&x.BranchNode)
		case *parse.WithNode:
			branch(&x.BranchNode)
		case *parse.TemplateNode:
			n.includes = append(n.includes, x.Name)
			visitPipe(x.Pipe, "")
		case *parse.PipeNode:
			visitPipe(x, parent)
		case *parse.ChainNode:
			visit(x.Node, "")
		case *parse.CommandNode:
			name := commandName(x)
			call(name, parent)
			if storing[name] {
				if len(x.Args) < 2 {
					n.stores = true
				} else {
					targets = append(targets, target{x.Args[1], name != "set" && name != "unset"})
				}
			}
			switch name {
			case "include":
				if len(x.Args) > 1 {
					if s, ok := x.Args[1].(*parse.StringNode); ok {
						n.includes = append(n.includes, s.Text)
					} else if rel, ok := inChart(x.Args[1]); ok {
						n.inChart = append(n.inChart, rel)
					} else {
						n.computed = true
					}
				}
			case "tpl":
				n.tpl = true
			}
			for i, arg := range x.Args {
				if i > 0 || name == "" {
					visit(arg, name)
				}
			}
		case *parse.IdentifierNode:
			call(x.Ident, parent) // a function called with no arguments, as an argument
		case *parse.StringNode:
			if strings.Contains(x.Text, "{{") {
				n.texts = append(n.texts, x.Text)
			}
		}
	}
	visit(tree.Root, "")
	local := locals(values)
	for _, t := range targets {
		if !local.fresh(t.changed, t.deep) {
			n.stores = true // the map it changes may be one another template reads
		}
	}
	return n
}

// inChart reads a template's name computed as (print $.Template.BasePath "/file.yaml") or
// (printf "%s/file.yaml" $.Template.BasePath), and returns "/file.yaml".
func inChart(arg parse.Node) (string, bool) {
	p, ok := arg.(*parse.PipeNode)
	if !ok || len(p.Cmds) != 1 || len(p.Decl) > 0 {
		return "", false
	}
	args := p.Cmds[0].Args
	switch commandName(p.Cmds[0]) {
	case "print":
		if len(args) < 3 || !basePath(args[1]) {
			return "", false
		}
		var rel strings.Builder
		for _, a := range args[2:] {
			s, ok := a.(*parse.StringNode)
			if !ok {
				return "", false
			}
			rel.WriteString(s.Text)
		}
		return rel.String(), strings.HasPrefix(rel.String(), "/")
	case "printf":
		if len(args) != 3 || !basePath(args[2]) {
			return "", false
		}
		f, ok := args[1].(*parse.StringNode)
		if !ok || !strings.HasPrefix(f.Text, "%s/") || strings.Contains(f.Text[2:], "%") {
			return "", false
		}
		return f.Text[2:], true
	}
	return "", false
}

// basePath tells $.Template.BasePath or .Template.BasePath.
func basePath(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.VariableNode:
		return len(n.Ident) == 3 && n.Ident[0] == "$" && n.Ident[1] == "Template" && n.Ident[2] == "BasePath"
	case *parse.FieldNode:
		return len(n.Ident) == 2 && n.Ident[0] == "Template" && n.Ident[1] == "BasePath"
	}
	return false
}

// making are the functions that return a map or list of their own: a change to it shows
// nowhere else. copying return one whose every nested map and list is its own too; the others
// hold what they are given (dict "k" .Values.x holds the values' own map).
var (
	making  = setOf("dict", "list", "tuple", "pick", "omit")
	copying = setOf("deepCopy", "mustDeepCopy", "fromYaml", "fromYamlArray", "fromJson", "fromJsonArray", "mustFromJson", "fromToml")
)

// localVars are a template's variables that only ever hold a map or list of the template's
// own: at its top (set and unset change only that), or all the way down (merge and
// mergeOverwrite change the nested maps of their target in place).
type localVars struct{ top, deep map[string]bool }

// locals reads a template's variables from their values (nil: an element of a range).
func locals(values map[string][]*parse.PipeNode) localVars {
	l := localVars{top: map[string]bool{}, deep: map[string]bool{}}
	// For each level, the largest set of variables whose every value is local: start from
	// all, drop those with a value that is not, until none is dropped.
	for _, deep := range []bool{false, true} {
		set := l.top
		if deep {
			set = l.deep
		}
		for name := range values {
			set[name] = true
		}
		for changed := true; changed; {
			changed = false
			for name, ps := range values {
				if !set[name] {
					continue
				}
				for _, p := range ps {
					if p == nil || !l.freshPipe(p, deep) {
						set[name], changed = false, true
						break
					}
				}
			}
		}
	}
	return l
}

// fresh tells whether arg is a map or list of the template's own (with deep, all the way
// down): a local variable (not a field of it), or a pipeline that makes one.
func (l localVars) fresh(arg parse.Node, deep bool) bool {
	switch a := arg.(type) {
	case *parse.VariableNode:
		if len(a.Ident) != 1 || a.Ident[0] == "$" {
			return false
		}
		if deep {
			return l.deep[a.Ident[0]]
		}
		return l.top[a.Ident[0]]
	case *parse.PipeNode:
		return len(a.Decl) == 0 && l.freshPipe(a, deep)
	case *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.NilNode:
		return deep // a constant holds nothing another template can change
	}
	return false
}

// freshPipe tells whether p's value is a map or list of the template's own (with deep, all
// the way down).
func (l localVars) freshPipe(p *parse.PipeNode, deep bool) bool {
	// fresh is command i's value, given what the one before it passes it.
	var fresh func(i int) bool
	fresh = func(i int) bool {
		c := p.Cmds[i]
		piped := func() bool { return i == 0 || fresh(i-1) } // nothing piped: nothing shared
		name := commandName(c)
		switch {
		case copying[name]:
			return true
		case making[name]:
			if !deep {
				return true
			}
			if name == "pick" || name == "omit" {
				return false // the map's own values
			}
			for _, a := range c.Args[1:] {
				if !l.fresh(a, true) {
					return false
				}
			}
			return piped()
		case storing[name] && name != "set" && name != "unset":
			// merge returns its target, which holds what it merged in
			if len(c.Args) < 2 || !l.fresh(c.Args[1], deep) {
				return false
			}
			if deep {
				for _, a := range c.Args[2:] {
					if !l.fresh(a, true) {
						return false
					}
				}
				return piped()
			}
			return true
		case name == "" && len(c.Args) == 1 && i == 0:
			return l.fresh(c.Args[0], deep)
		}
		return false
	}
	return len(p.Cmds) > 0 && fresh(len(p.Cmds)-1)
}

// commandName is the function a command calls ("" when it calls none: a field, a variable).
func commandName(c *parse.CommandNode) string {
	if len(c.Args) == 0 {
		return ""
	}
	if id, ok := c.Args[0].(*parse.IdentifierNode); ok {
		return id.Ident
	}
	return ""
}
