package pipeline

// SinceHandoff is the conversation msgs as an agent sees it when the run
// was handed to it by the call callID and its history setting is
// last_user: the system messages and the last user message before the
// turn that handed off, then what follows that turn (the assistant
// message that proposed callID and the tool results answering it are
// left out, with everything else before them). msgs is returned as is
// when no assistant message proposes callID.
func SinceHandoff(msgs []Message, callID string) []Message {
	turn := -1
	for i := len(msgs) - 1; i >= 0 && turn < 0; i-- {
		for _, c := range msgs[i].ToolCalls {
			if msgs[i].Role == RoleAssistant && c.ID == callID {
				turn = i
				break
			}
		}
	}
	if turn < 0 {
		return msgs
	}
	after := turn + 1
	for after < len(msgs) && msgs[after].Role == RoleTool {
		after++
	}
	var out []Message
	lastUser := -1
	for i, m := range msgs[:turn] {
		switch m.Role {
		case RoleSystem:
			out = append(out, m)
		case RoleUser:
			lastUser = i
		}
	}
	if lastUser >= 0 {
		out = append(out, msgs[lastUser])
	}
	return append(out, msgs[after:]...)
}
