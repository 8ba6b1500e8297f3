package chaos

import (
	"strings"
	"testing"
	"time"
)

func TestConfig_rolling_mode_switches_the_other_faults_off(t *testing.T) {
	c := Config{Rolling: true}
	c.setDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.KillEvery > 0 || c.Duplicate > 0 || c.killsRedis() || c.WorkerYAML != RollingWorkerYAML || c.Rounds != 2 {
		t.Fatalf("kill every %s, duplicate %g, redis kill %v, rounds %d, yaml %q", c.KillEvery, c.Duplicate, c.killsRedis(), c.Rounds, c.WorkerYAML)
	}
}

func TestConfig_rolling_mode_keeps_a_fault_asked_for(t *testing.T) {
	kill := true
	c := Config{Rolling: true, Duplicate: 0.1, RedisKill: &kill}
	c.setDefaults()
	if c.Duplicate != 0.1 || !c.killsRedis() {
		t.Fatalf("duplicate %g, redis kill %v", c.Duplicate, c.killsRedis())
	}
}

func TestConfig_kill_churn_keeps_its_defaults(t *testing.T) {
	var c Config
	c.setDefaults()
	if c.KillEvery != 2*time.Second || c.Duplicate != 0.2 || !c.killsRedis() || c.WorkerYAML != DefaultWorkerYAML {
		t.Fatalf("kill every %s, duplicate %g, redis kill %v", c.KillEvery, c.Duplicate, c.killsRedis())
	}
}

func TestConfig_rolling_mode_refuses_kills_and_no_churn(t *testing.T) {
	c := Config{Rolling: true, KillEvery: time.Second, Churn: -1}
	c.setDefaults()
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "separate experiments") || !strings.Contains(err.Error(), "churn period") {
		t.Fatalf("got %v", err)
	}
}
