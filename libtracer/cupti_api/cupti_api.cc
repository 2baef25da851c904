#include "libtracer/cupti_api/cupti_api.h"

#include "libtracer/cupti_api/pm_functions.h"

namespace tracer {

CUptiResult CuptiApi::GetDeviceId(CUcontext, uint32_t*) { return CUPTI_ERROR_NOT_SUPPORTED; }

#define TRACER_DEFAULT_PM(method, symbol, Params) \
  CUptiResult CuptiApi::method(Params*) { return CUPTI_ERROR_NOT_SUPPORTED; }
TRACER_CUPTI_PM_FUNCTIONS(TRACER_DEFAULT_PM)
#undef TRACER_DEFAULT_PM

}  // namespace tracer
