package robots

import (
	"context"
	"log/slog"

	"github.com/f9014239/robots/fleet"
)

// logs writes a Transport's records to its Logger, if it has one.
type logs struct {
	logger *slog.Logger // nil for none
}

// debugging reports whether the Logger takes debug records: a caller builds
// one only then, so that a Transport whose Logger does not allocates nothing
// for them.
func (t *logs) debugging(ctx context.Context) bool {
	l := t.logger
	return l != nil && l.Enabled(ctx, slog.LevelDebug)
}

// debugRefused writes a debug record of a refusal.
func (t *logs) debugRefused(ctx context.Context, de *DisallowedError) {
	attrs := []slog.Attr{slog.String("url", de.URL.Redacted()), slog.String("agent", de.Agent)}
	switch {
	case de.Err != nil:
		attrs = append(attrs, slog.String("why", "robots.txt unreachable"), slog.Any("err", de.Err), slog.Time("retry_at", de.RetryAt))
	case de.Use != "":
		attrs = append(attrs, slog.String("use", de.Use), slog.String("rule", de.Rule), slog.Int("line", de.Line))
	default:
		attrs = append(attrs, slog.String("rule", de.Rule), slog.Int("line", de.Line))
	}
	t.debug(ctx, "robots: refused", attrs...)
}

// debug writes a debug record. The caller checked t.debugging first. A
// Logger that panics here is ignored: a record is not worth a request.
func (t *logs) debug(ctx context.Context, msg string, attrs ...slog.Attr) {
	defer func() { recover() }()
	t.logger.LogAttrs(ctx, slog.LevelDebug, msg, attrs...)
}

// log writes a record, if the Transport has a Logger.
func (t *logs) log(ctx context.Context, msg string, args ...any) {
	if l := t.logger; l != nil {
		l.WarnContext(ctx, msg, args...)
	}
}

// logFetch writes a record of a fetch, if the Transport has a Logger.
func (t *logs) logFetch(ctx context.Context, origin string, r *fetchResult, e *fleet.Entry) {
	l := t.logger
	if l == nil {
		return
	}
	level := slog.LevelInfo
	attrs := []slog.Attr{
		slog.String("origin", origin),
		slog.String("access", r.access.String()),
		slog.Int("status", r.status),
		slog.Time("expires", e.Expires),
	}
	if r.from != "" {
		// answered through a redirect to another origin
		attrs = append(attrs, slog.String("from", r.from))
	}
	if r.err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.Any("err", r.err))
		if e.Access != fleet.AccessUnreachable {
			attrs = append(attrs, slog.String("obeying", "last good copy"))
		}
	}
	l.LogAttrs(ctx, level, "robots: fetched robots.txt", attrs...)
}

// turnLog is the pacing.Logger of a Transport's records.
type turnLog struct{ l *logs }

func (t turnLog) Debugging(ctx context.Context) bool { return t.l.debugging(ctx) }

func (t turnLog) Debug(ctx context.Context, msg string, attrs ...slog.Attr) {
	t.l.debug(ctx, msg, attrs...)
}

func (t turnLog) Warn(ctx context.Context, msg string, args ...any) { t.l.log(ctx, msg, args...) }
