//go:build !unix

package metrics

import "io/fs"

// inode returns 0 where the system has no inode numbers: a store then
// knows a file by path, size, modification time and the hashes of its
// ends.
func inode(info fs.FileInfo) int64 { return 0 }
