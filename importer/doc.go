// Package importer turns the session transcripts third-party agents write
// about themselves into retrace trajectories.
package importer
