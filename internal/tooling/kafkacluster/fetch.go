package kafkacluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Version is the Apache Kafka release the cluster runs (Java 17 or later).
const Version = "4.4.0"

// log4jVersion is the Log4j 2 release of Version's dependencies; its SLF4J
// binding routes the broker's logs to the node's log file.
const log4jVersion = "2.25.5"

// EnvCache names the directory the fetched artifacts are kept in; by
// default $XDG_CACHE_HOME/stepwise/kafka (~/.cache/stepwise/kafka).
const EnvCache = "STEPWISE_KAFKA_CACHE"

// pom lists what a node needs: the broker with its storage tool, and the
// logging binding.
const pom = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>run.stepwise</groupId>
  <artifactId>kafka-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>%s</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>%s</version>
    </dependency>
  </dependencies>
</project>
`

// CacheDir is where Fetch keeps the artifacts: EnvCache when set, else
// stepwise/kafka under the user's cache directory.
func CacheDir() (string, error) {
	if d := os.Getenv(EnvCache); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("kafka cache: %w (set %s)", err, EnvCache)
	}
	return filepath.Join(d, "stepwise", "kafka"), nil
}

// Fetch returns the directory of Version's jars under cache, fetching them
// with Maven (`mvn dependency:copy-dependencies`) the first time; Maven's
// output goes to log. A fetch that fails leaves nothing half-written: the
// jars are moved into place only when all of them arrived.
func Fetch(ctx context.Context, cache string, log io.Writer) (string, error) {
	libs := filepath.Join(cache, Version, "libs")
	if _, err := os.Stat(filepath.Join(libs, "kafka_2.13-"+Version+".jar")); err == nil {
		return libs, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", errors.New("fetch Apache Kafka: mvn is not on PATH (apt-get install maven)")
	}
	if err := os.MkdirAll(filepath.Join(cache, Version), 0o755); err != nil {
		return "", fmt.Errorf("fetch Apache Kafka: %w", err)
	}
	work, err := os.MkdirTemp(filepath.Join(cache, Version), "fetch-")
	if err != nil {
		return "", fmt.Errorf("fetch Apache Kafka: %w", err)
	}
	defer os.RemoveAll(work)
	if err := os.WriteFile(filepath.Join(work, "pom.xml"), fmt.Appendf(nil, pom, Version, log4jVersion), 0o644); err != nil {
		return "", fmt.Errorf("fetch Apache Kafka: %w", err)
	}
	out := filepath.Join(work, "libs")
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "-Dstyle.color=never", "dependency:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+out)
	cmd.Dir, cmd.Stdout, cmd.Stderr = work, log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("fetch Apache Kafka %s with Maven: %w", Version, err)
	}
	if err := os.Rename(out, libs); err != nil {
		if _, serr := os.Stat(filepath.Join(libs, "kafka_2.13-"+Version+".jar")); serr == nil {
			return libs, nil // another process fetched them meanwhile
		}
		return "", fmt.Errorf("fetch Apache Kafka: %w", err)
	}
	return libs, nil
}

// classpath is the java -cp value of the jars in libs.
func classpath(libs string) string {
	return strings.TrimSuffix(libs, string(filepath.Separator)) + string(filepath.Separator) + "*"
}
