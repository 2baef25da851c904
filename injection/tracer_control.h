/* C control API of libtracer.so, for programs that want to steer the tracer
   (look the symbols up with dlsym; they are absent when not traced). */
#ifndef TRACER_CONTROL_H_
#define TRACER_CONTROL_H_

#ifdef __cplusplus
#define TRACER_NOEXCEPT noexcept
extern "C" {
#else
#define TRACER_NOEXCEPT
#endif

/* Writes everything buffered so far to the trace file (bounded wait).
   Returns 1 when a session is running, 0 otherwise. */
int tracerFlush(void) TRACER_NOEXCEPT;
/* Opens / closes the capture window, like cudaProfilerStart/Stop. */
void tracerStart(void) TRACER_NOEXCEPT;
void tracerStop(void) TRACER_NOEXCEPT;
/* 1 while events are being recorded. */
int tracerIsActive(void) TRACER_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* TRACER_CONTROL_H_ */
