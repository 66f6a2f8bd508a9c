// Package argohealth is test bed: it runs an Argo CD resource health script
// (resource.customizations.health.<group>_<kind>) on an object the way
// Argo CD does, with gopher-lua (the Lua VM Argo CD embeds): the object as
// the global obj, the script's returned table read as status and message.
package argohealth

import (
	"encoding/json"
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// Statuses are the health statuses Argo CD accepts from a script.
var Statuses = map[string]bool{"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true}

// Result is what the script returned.
type Result struct{ Status, Message string }

// Evaluate runs script on obj (any value that marshals to a Kubernetes
// object's JSON). Only the base, table, string and math libraries are
// open, so a script that needs more fails here as it would in Argo CD.
func Evaluate(script string, obj any) (Result, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return Result{}, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return Result{}, err
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", toLua(L, v))
	if err := L.DoString(script); err != nil {
		return Result{}, err
	}
	tbl, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return Result{}, fmt.Errorf("the script returned %s, not a table", L.Get(-1).Type())
	}
	r := Result{Status: lua.LVAsString(tbl.RawGetString("status")), Message: lua.LVAsString(tbl.RawGetString("message"))}
	if !Statuses[r.Status] {
		return r, fmt.Errorf("the script returned status %q, which Argo CD does not know", r.Status)
	}
	return r, nil
}

// toLua converts decoded JSON into Lua values: objects to tables keyed by
// string, arrays to 1-based sequences, numbers to numbers; null is nil.
func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range x {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range x {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(x)
	case float64:
		return lua.LNumber(x)
	case bool:
		return lua.LBool(x)
	default:
		return lua.LNil
	}
}
