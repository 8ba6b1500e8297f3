package mcptool

import (
	"bytes"
	"os"
	"strconv"
)

// groupAlive reports whether a process of group pgid is still running.
// Zombies do not count: an orphan that has exited waits for its new parent
// to reap it, which may be never when this program is PID 1.
func groupAlive(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell; let the caller's deadline decide
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 3 || string(f[0]) == "Z" || string(f[0]) == "X" {
			continue
		}
		if g, err := strconv.Atoi(string(f[2])); err == nil && g == pgid {
			return true
		}
	}
	return false
}
