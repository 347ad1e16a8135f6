package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// File is one configuration file as read: its name, its content, and the
// YAML tree it came from, so a message about a setting can name its line.
type File struct {
	// Name is the file's path (or another label), used in messages.
	Name string
	// Config is the file's content.
	Config Config
	// doc is the file's root mapping; nil for an empty file.
	doc *yaml.Node
}

// LoadFile reads and decodes the configuration file at path, keeping the
// line of every setting for later messages.
func LoadFile(path string) (File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("config: %w", err)
	}
	return ParseFile(data, path)
}

// ParseFile decodes a configuration from data like Parse does, keeping the
// line of every setting; name is used in messages.
func ParseFile(data []byte, name string) (File, error) {
	cfg, err := Parse(data, name)
	if err != nil {
		return File{}, err
	}
	f := File{Name: name, Config: cfg}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		// Parse accepted the same bytes, so this cannot happen; without a
		// tree the messages merely lack line numbers.
		return f, nil
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		f.doc = doc.Content[0]
	}
	return f, nil
}

// Line returns the line of the setting at path, a sequence of mapping
// keys and list indexes such as ("permissions", "allow", 2); 0 when the
// file does not spell it out (an empty file, or a value reached through
// an anchor the walk does not follow).
func (f File) Line(path ...any) int {
	n, line := f.doc, 0
	for _, step := range path {
		n = deref(n)
		if n == nil {
			return 0
		}
		switch s := step.(type) {
		case string:
			key, val := mappingEntry(n, s, 0)
			if key == nil {
				return 0
			}
			n, line = val, key.Line
		case int:
			if n.Kind != yaml.SequenceNode || s < 0 || s >= len(n.Content) {
				return 0
			}
			n, line = n.Content[s], n.Content[s].Line
		default:
			return 0
		}
	}
	return line
}

// maxMergeDepth bounds how deep Line follows YAML merge keys ("<<"), so a
// hostile file cannot make the walk loop.
const maxMergeDepth = 8

// mappingEntry finds key in the mapping n, looking through merge keys.
func mappingEntry(n *yaml.Node, key string, depth int) (k, v *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode || depth > maxMergeDepth {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != "<<" {
			continue
		}
		merged := deref(n.Content[i+1])
		if merged == nil {
			continue
		}
		candidates := []*yaml.Node{merged}
		if merged.Kind == yaml.SequenceNode {
			candidates = merged.Content
		}
		for _, c := range candidates {
			if k, v := mappingEntry(deref(c), key, depth+1); k != nil {
				return k, v
			}
		}
	}
	return nil, nil
}

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxMergeDepth; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// At returns the place of the setting at path as "name:line" for
// messages, or the file's name alone when the line is unknown.
func (f File) At(path ...any) string { return at(f.Name, f.Line(path...)) }

// at formats a file position as "name:line", or the name alone when the
// line is unknown.
func at(name string, line int) string {
	if line <= 0 {
		return name
	}
	return name + ":" + strconv.Itoa(line)
}
