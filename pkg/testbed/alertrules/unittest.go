package alertrules

// The promtool unit-test file format (`promtool test rules`).

// TestFile is one promtool rule test file.
type TestFile struct {
	RuleFiles          []string   `json:"rule_files"`
	EvaluationInterval string     `json:"evaluation_interval"`
	Tests              []TestCase `json:"tests"`
}

// TestCase is one test group: input series and the checks over them.
type TestCase struct {
	Name        string      `json:"name"`
	Interval    string      `json:"interval"`
	InputSeries []Series    `json:"input_series"`
	AlertTests  []AlertTest `json:"alert_rule_test,omitempty"`
	ExprTests   []ExprTest  `json:"promql_expr_test,omitempty"`
}

// AlertTest expects exactly these alerts of one name firing at EvalTime.
type AlertTest struct {
	EvalTime  string          `json:"eval_time"`
	AlertName string          `json:"alertname"`
	ExpAlerts []ExpectedAlert `json:"exp_alerts"`
}

// ExpectedAlert is one firing alert: its labels (the rule's and the
// series') and its rendered annotations.
type ExpectedAlert struct {
	Labels      map[string]string `json:"exp_labels"`
	Annotations map[string]string `json:"exp_annotations,omitempty"`
}

// ExprTest expects an expression to return exactly these samples.
type ExprTest struct {
	Expr       string           `json:"expr"`
	EvalTime   string           `json:"eval_time"`
	ExpSamples []ExpectedSample `json:"exp_samples"`
}

// ExpectedSample is one sample of an ExprTest.
type ExpectedSample struct {
	Labels string  `json:"labels"`
	Value  float64 `json:"value"`
}
