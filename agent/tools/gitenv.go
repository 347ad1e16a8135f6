package tools

import (
	"fmt"
	"strconv"
	"strings"
)

// readOnlyGitConfig is the git configuration forced on commands the shell
// analysis calls read-only. A workspace is untrusted, and its .git/config
// and .git/hooks can make even "git status" run programs: core.fsmonitor
// names a program git runs to list changed files, a post-index-change hook
// runs when status refreshes the index, and log.showSignature makes log and
// show run gpg.program. A read-only call runs without a person's approval,
// so it must not run the workspace's code; a call a person or a rule
// approved keeps the repository's own git behaviour.
var readOnlyGitConfig = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
	{"log.showSignature", "false"},
}

// withReadOnlyGit returns environ with readOnlyGitConfig added through
// GIT_CONFIG_COUNT, after any GIT_CONFIG_KEY_n/VALUE_n pairs already there:
// git gives command-line and environment configuration precedence over
// every file, so a repository cannot undo it.
func withReadOnlyGit(environ []string) []string {
	n := 0
	out := make([]string, 0, len(environ)+2*len(readOnlyGitConfig)+1)
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			if c, err := strconv.Atoi(v); err == nil && c > 0 {
				n = c
			}
			continue
		}
		out = append(out, kv)
	}
	for i, kv := range readOnlyGitConfig {
		out = append(out,
			fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n+i, kv[0]),
			fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n+i, kv[1]))
	}
	return append(out, fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+len(readOnlyGitConfig)))
}
