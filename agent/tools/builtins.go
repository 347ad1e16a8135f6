package tools

// Builtins returns the built-in tools in their fixed order: read, write,
// edit, grep, glob, ls, bash, todo_write, tool_search. The order is part
// of the bytes the provider caches; append new tools, never
// reorder.
func Builtins() []Tool {
	return []Tool{
		ReadTool{},
		WriteTool{},
		EditTool{},
		GrepTool{},
		GlobTool{},
		LsTool{},
		BashTool{},
		TodoWriteTool{},
		ToolSearchTool{},
	}
}
