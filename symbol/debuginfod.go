package symbol

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultDebuginfodTimeout is the default time allowed for one fetch,
// elfutils' default for DEBUGINFOD_TIMEOUT.
const DefaultDebuginfodTimeout = 90 * time.Second

// maxDebuginfoSize bounds a downloaded debug file.
const maxDebuginfoSize = 4 << 30

// Debuginfod is a client of debuginfod servers, which serve debug files by
// build-id. Its fields must not be changed while it is used; it is safe for
// concurrent use.
type Debuginfod struct {
	// URLs are the servers' base URLs, tried in order.
	URLs []string
	// CacheDir holds fetched files as CacheDir/<hex build-id>/debuginfo,
	// the layout of elfutils' client cache. Empty means no cache: each
	// Fetch downloads into a temporary file the caller must remove.
	CacheDir string
	// Timeout bounds each Fetch, over all URLs; 0 means
	// [DefaultDebuginfodTimeout].
	Timeout time.Duration
	// Client makes the requests; nil means http.DefaultClient.
	Client *http.Client
}

// DebuginfodFromEnv returns a client configured like elfutils' from the
// environment, or nil when DEBUGINFOD_URLS is empty or unset:
// DEBUGINFOD_URLS holds space-separated server URLs; DEBUGINFOD_CACHE_PATH
// the cache directory (default $XDG_CACHE_HOME/nsprof/debuginfod, or
// ~/.cache/nsprof/debuginfod); DEBUGINFOD_TIMEOUT the timeout in seconds
// (default 90).
func DebuginfodFromEnv() *Debuginfod {
	urls := strings.Fields(os.Getenv("DEBUGINFOD_URLS"))
	if len(urls) == 0 {
		return nil
	}
	d := &Debuginfod{URLs: urls, Timeout: DefaultDebuginfodTimeout}
	if s := os.Getenv("DEBUGINFOD_TIMEOUT"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			d.Timeout = time.Duration(n) * time.Second
		}
	}
	d.CacheDir = os.Getenv("DEBUGINFOD_CACHE_PATH")
	if d.CacheDir == "" {
		if c, err := os.UserCacheDir(); err == nil {
			d.CacheDir = filepath.Join(c, "nsprof", "debuginfod")
		}
	}
	return d
}

// Fetch returns the path of the debug file of buildID: from the cache when
// it is there, otherwise downloaded from GET URL/buildid/<hex>/debuginfo
// of the first server that has it, checked to carry buildID, and written
// to the cache atomically (a temporary file renamed into place). The error
// wraps fs.ErrNotExist when no server has the file.
func (d *Debuginfod) Fetch(ctx context.Context, buildID []byte) (path string, err error) {
	if len(buildID) == 0 || len(buildID) > maxBuildIDSize {
		return "", fmt.Errorf("debuginfod: bad build-id %x", buildID)
	}
	id := hex.EncodeToString(buildID)
	var final string
	if d.CacheDir != "" {
		final = filepath.Join(d.CacheDir, id, "debuginfo")
		if ok, _ := hasBuildID(final, buildID); ok {
			return final, nil
		}
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultDebuginfodTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var errs []error
	for _, u := range d.URLs {
		p, err := d.fetchOne(ctx, strings.TrimRight(u, "/")+"/buildid/"+id+"/debuginfo", buildID, final)
		if err == nil {
			return p, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return "", fmt.Errorf("debuginfod: build-id %s: no server URLs: %w", id, os.ErrNotExist)
	}
	return "", fmt.Errorf("debuginfod: build-id %s: %w", id, errors.Join(errs...))
}

// fetchOne downloads url into final (or a temporary file when final is
// "") and checks its build-id.
func (d *Debuginfod) fetchOne(ctx context.Context, url string, buildID []byte, final string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	client := d.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return "", fmt.Errorf("%s: %s: %w", url, resp.Status, os.ErrNotExist)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	dir := os.TempDir()
	if final != "" {
		dir = filepath.Dir(final)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	tmp, err := os.CreateTemp(dir, ".debuginfo-*")
	if err != nil {
		return "", err
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err := io.Copy(tmp, io.LimitReader(resp.Body, maxDebuginfoSize+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", url, err)
	}
	if n > maxDebuginfoSize {
		return "", fmt.Errorf("%s: larger than %d bytes", url, int64(maxDebuginfoSize))
	}
	f, err := NewFile(tmp)
	if err != nil {
		return "", fmt.Errorf("%s: %w", url, err)
	}
	if !bytes.Equal(f.BuildID(), buildID) {
		return "", fmt.Errorf("%s: served a file with build-id %x", url, f.BuildID())
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if final == "" {
		keep = true
		return tmp.Name(), nil
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", err
	}
	keep = true
	return final, nil
}

// hasBuildID reports whether the ELF file at path carries buildID.
func hasBuildID(path string, buildID []byte) (bool, error) {
	f, err := Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return bytes.Equal(f.BuildID(), buildID), nil
}
