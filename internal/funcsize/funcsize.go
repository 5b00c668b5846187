// Package funcsize measures Go functions: their length in lines and their
// cyclomatic complexity, counted as gocyclo counts it (one, plus one for
// each if, for, range, non-default case, non-default select case, && and
// ||). Its test holds the repository to the limits docs/design.md names.
package funcsize

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Func is one measured function or method.
type Func struct {
	Pos        string // file:line
	Name       string // Recv.Name or Name
	Lines      int
	Cyclomatic int
}

// Measure parses every non-test .go file under root (skipping testdata,
// node_modules and hidden directories) and returns its functions, the
// longest first.
func Measure(root string) ([]Func, error) {
	var out []Func
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start := fset.Position(fn.Pos())
			end := fset.Position(fn.End())
			out = append(out, Func{
				Pos:        rel + ":" + itoa(start.Line),
				Name:       funcName(fn),
				Lines:      end.Line - start.Line + 1,
				Cyclomatic: Cyclomatic(fn),
			})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Lines > out[j].Lines })
	return out, err
}

// Cyclomatic counts fn's cyclomatic complexity. Function literals inside
// fn count towards fn, as gocyclo counts them.
func Cyclomatic(fn *ast.FuncDecl) int {
	n := 1
	ast.Inspect(fn, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fn.Name.Name
		}
		return fn.Name.Name
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// cyclomaticOf parses src (one file) and counts its first function.
func cyclomaticOf(src string) (int, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "src.go", src, 0)
	if err != nil {
		return 0, err
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok {
			return Cyclomatic(fn), nil
		}
	}
	return 0, nil
}
