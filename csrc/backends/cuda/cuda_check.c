/* cuda_check.c - the one place where a CUDA runtime or cuBLAS status becomes
 * a pg_status with a message (like CuPy's single check point).
 *
 * The message names the device, the user-facing op and the failing call,
 * plus CUDA's own error name and text; it goes to the core through
 * core->error_set (the plugin cannot call pg_error_set) and a copy stays in
 * a thread-local buffer so that it can also be stored in a storage's error. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

static _Thread_local char pg_cuda_msg[PG_ERRMSG_LEN];

const char *pg_cuda_last_message(void) { return pg_cuda_msg; }

pg_status pg_cuda_error(pg_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pg_cuda_msg, sizeof pg_cuda_msg, fmt, ap);
    va_end(ap);
    if (pg_cuda.core != NULL && pg_cuda.core->error_set != NULL)
        pg_cuda.core->error_set(st, "%s", pg_cuda_msg);
    return st;
}

static pg_status pg_cuda_status_of(pg_cuda_lib lib, int code, bool deferred)
{
    if (deferred)
        return PG_ERR_ASYNC;
    if (lib == PG_CUDA_LIB_CUBLAS)
        return code == CUBLAS_STATUS_ALLOC_FAILED ? PG_ERR_NOMEM : PG_ERR_RUNTIME;
    switch ((cudaError_t)code) {
    case cudaErrorMemoryAllocation:
        return PG_ERR_NOMEM;
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorStubLibrary:
        return PG_ERR_UNAVAILABLE;
    default:
        return PG_ERR_RUNTIME;
    }
}

/* Errors after which the CUDA context refuses all further work. */
static bool pg_cuda_is_sticky(int code)
{
    switch ((cudaError_t)code) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
        return true;
    default:
        return false;
    }
}

pg_status pg_cuda_check(pg_cuda_lib lib, int code, int dev, const char *op, const char *call,
                        bool deferred)
{
    if (code == 0)
        return PG_OK;
    const char *name, *text;
    bool sticky = false;
    if (lib == PG_CUDA_LIB_CUBLAS) {
        name = cublasGetStatusName((cublasStatus_t)code);
        text = cublasGetStatusString((cublasStatus_t)code);
    } else {
        name = cudaGetErrorName((cudaError_t)code);
        text = cudaGetErrorString((cudaError_t)code);
        sticky = pg_cuda_is_sticky(code);
        (void)cudaGetLastError(); /* so a later launch check does not report it again */
    }
    char where[16];
    if (dev >= 0)
        snprintf(where, sizeof where, "cuda:%d", dev);
    else
        snprintf(where, sizeof where, "cuda");
    int call_len = (int)strcspn(call, "("); /* "cudaMalloc(&p, n)" -> "cudaMalloc" */
    pg_status st = pg_cuda_status_of(lib, code, deferred);
    if (deferred)
        return pg_cuda_error(st, "%s: %s failed on the device (reported by %.*s): %s: %s%s", where,
                             op, call_len, call, name, text,
                             sticky ? "; the CUDA context is now unusable, restart the process "
                                      "(CUDA_LAUNCH_BLOCKING=1 pins down the failing op)"
                                    : "");
    return pg_cuda_error(st, "%s: %s: %.*s failed: %s: %s", where, op, call_len, call, name, text);
}
