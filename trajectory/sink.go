package trajectory

// Sink receives the events of one session as the runtime produces them.
// The runtime emits into a Sink and never writes files itself, so recording,
// redaction and label discipline happen in one place (the recorder).
type Sink interface {
	// Emit records one event of the given model turn. The sink fills in the
	// envelope (version, session, seq, time). Emit never fails and never
	// panics: telemetry must not break the main flow, so a
	// sink counts its problems and reports them when the session ends.
	// Emit is safe for concurrent use by parallel tools.
	Emit(turn int, p Payload)
}
