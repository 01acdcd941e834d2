package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// down stops exactly the processes up recorded in DIR/pids: SIGTERM, then SIGKILL after 10 s.
// A pid whose executable is no longer the one up started (reused by another process) is left
// alone.
func down(dir string) error {
	f, err := os.Open(filepath.Join(dir, "pids"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var procs []proc
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 3)
		if len(parts) != 3 {
			continue
		}
		pid, err := strconv.Atoi(parts[1])
		if err != nil {
			continue
		}
		procs = append(procs, proc{name: parts[0], pid: pid, exe: parts[2]})
	}
	f.Close()
	// Stop in reverse start order: controllers before the API server they talk to.
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		if !ours(p) {
			continue
		}
		syscall.Kill(p.pid, syscall.SIGTERM)
		deadline := time.Now().Add(10 * time.Second)
		for alive(p.pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(p.pid) {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	return os.Remove(filepath.Join(dir, "pids"))
}

// ours reports whether pid still runs the executable up started.
func ours(p proc) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.pid))
	return err == nil && strings.TrimSuffix(exe, " (deleted)") == p.exe
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func printLogs(dir string, w io.Writer) error {
	files, err := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintf(w, "==> %s <==\n%s\n", f, tail(f, 200))
	}
	return nil
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
