package pipeline

// ChildRunID names the child run that call callID of run parentID starts
// (a call of a tool whose executor is an agent): "<parent>.<call>". It is
// the same for every delivery of the call, so a call redelivered or
// executed again finds the child it started instead of starting another.
func ChildRunID(parentID, callID string) string { return parentID + "." + callID }

// ChildDecisionID is the id of the decision a child run's end applies to
// the call of its parent that waits for it: "child:<child run id>", one
// per child, so telling the parent again is a duplicate.
func ChildDecisionID(childID string) string { return "child:" + childID }
