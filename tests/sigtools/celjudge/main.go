// Command cel-judge is test infrastructure: cel-go, the CEL of Kubernetes, evaluates the
// attestation conditions of the corpus the integration tests make
// (tests/it/signatures/oracle/conditions.rs), so that the controller's verdict on each
// (expression, statement) case can be compared with cel-go's.
//
// One case per line of JSON on stdin, one verdict per line on stdout:
//
//	{"id": "...", "expression": "...", "statement": {...}, "digest": "sha256:...", "now": "RFC 3339"}
//	{"id": "...", "valid": true|false, "reason": "..."}
//
// The environment is the controller's: the variables statement, predicate, digest and now, the
// statement as JSON decodes (numbers are doubles), cel-go's standard library, with the options
// the Kubernetes API server sets (k8s.io/apiserver/pkg/cel/environment): UTC as the default
// time zone of the timestamp accessors, numeric comparisons across int, uint and double,
// homogeneous aggregate literals. A case is valid when the expression compiles, its type is
// bool, and it evaluates to true.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"cel.dev/cel-go/cel"
)

type condition struct {
	ID         string         `json:"id"`
	Expression string         `json:"expression"`
	Statement  map[string]any `json:"statement"`
	Digest     string         `json:"digest"`
	Now        string         `json:"now"`
}

type verdict struct {
	ID     string `json:"id"`
	Valid  bool   `json:"valid"`
	Reason string `json:"reason,omitempty"`
}

func main() {
	env, err := cel.NewEnv(
		cel.Variable("statement", cel.DynType),
		cel.Variable("predicate", cel.DynType),
		cel.Variable("digest", cel.StringType),
		cel.Variable("now", cel.TimestampType),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cel-judge:", err)
		os.Exit(2)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c condition
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintln(os.Stderr, "cel-judge: a case is not JSON:", err)
			os.Exit(2)
		}
		valid, reason := judge(env, &c)
		if err := out.Encode(verdict{ID: c.ID, Valid: valid, Reason: reason}); err != nil {
			fmt.Fprintln(os.Stderr, "cel-judge:", err)
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "cel-judge:", err)
		os.Exit(2)
	}
}

func judge(env *cel.Env, c *condition) (bool, string) {
	ast, issues := env.Compile(c.Expression)
	if issues != nil && issues.Err() != nil {
		return false, "compile: " + issues.Err().Error()
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return false, "compile: its type is " + ast.OutputType().String() + ", not bool"
	}
	program, err := env.Program(ast)
	if err != nil {
		return false, "program: " + err.Error()
	}
	now, err := time.Parse(time.RFC3339, c.Now)
	if err != nil {
		return false, "now: " + err.Error()
	}
	predicate, ok := c.Statement["predicate"]
	if !ok {
		predicate = nil
	}
	value, _, err := program.Eval(map[string]any{
		"statement": c.Statement,
		"predicate": predicate,
		"digest":    c.Digest,
		"now":       now,
	})
	if err != nil {
		return false, "eval: " + err.Error()
	}
	if b, ok := value.Value().(bool); ok {
		if b {
			return true, ""
		}
		return false, "false"
	}
	return false, fmt.Sprintf("not a boolean: %v", value.Value())
}
