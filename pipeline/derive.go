package pipeline

// DeriveRunStatus is the seeds' derive_run_status: the run's status during a
// step, projected from the statuses of that step's calls. Any call that is
// new, running or resuming keeps the run running (new counts as running here:
// it has been handed to a tool worker, or is about to be); otherwise any
// suspended call makes it waiting; otherwise every call is terminal and the
// step is done.
func DeriveRunStatus(calls []ToolCallStatus) RunStatus {
	suspended := false
	for _, st := range calls {
		switch st {
		case CallNew, CallRunning, CallResuming:
			return RunRunning
		case CallSuspended:
			suspended = true
		}
	}
	if suspended {
		return RunWaiting
	}
	return RunDone
}
