// Package workspace is the workspace boundary: it turns a path a tool was
// given into the file that will be opened, and opens exactly that file.
//
// It is its own concept because two layers must agree on it to the byte.
// The permission chain decides on a path (is it inside the workspace, is it
// protected, does a rule cover it) and the tool then opens a path; when the
// two are computed differently, the check approves one file and the tool
// touches another. A symlink that points inside the workspace (l -> d1/d2)
// is enough: lexically l/../../outside/x is ../outside/x, while the kernel
// applies each ".." to the symlink's target and lands in the workspace, or
// the other way round. So both layers call Root.Resolve, which walks the
// path component by component the way the kernel does,
// and the tools open the Target it returns through Root.Open and
// Root.WriteFile.
//
// Resolution follows every symlink, intermediate or final, dangling ones
// included: a write through a dangling link creates the link's target, so
// the target is what is checked. Components that do not exist are appended
// as they are, so a new file is placed in the real directory that will hold
// it. More than 40 links in one resolution is a loop (ErrLoop), as the
// kernel's ELOOP limit.
//
// A Target inside the workspace is opened through os.Root with its
// resolved, symlink-free relative path, so even if a component is replaced
// by a symlink between the check and the open, the open cannot leave the
// workspace: os.Root refuses links that escape it (and absolute links).
// What remains is a window in which a component is swapped for a link that
// stays inside the workspace, which changes which workspace file is opened
// but never lets a call out. A Target outside the workspace (a read a person
// confirmed) is opened by its absolute path, and there a swap between check
// and open is not prevented; writes outside the workspace are refused here
// as well as by the permission chain, so that window only concerns reads.
package workspace
