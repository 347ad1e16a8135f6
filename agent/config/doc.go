// Package config reads the runtime's configuration file, retrace.yaml: the
// permission policy, the hooks, the session limits and the MCP servers,
// each owned by its own package and embedded here under its key. Unknown keys are errors that name the key
// and its line, because a misspelt "deny:" silently ignored is a policy
// that silently does not apply.
package config
