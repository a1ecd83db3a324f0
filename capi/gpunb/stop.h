/* What every Fortran name does around the library call. The names return nothing, so an
 * error the library reported (its message is on stderr) stops the program, as upstream's
 * asserts do, but through exit(): Fortran's units are flushed and the status says why.
 * The floating-point exceptions gfortran reports at STOP (invalid, division by zero,
 * overflow, underflow) that the call raised and the caller had not are cleared again:
 * the kernels' masked lanes (a zero distance's 1/r) would otherwise show up in its note.
 * Testing the flags is cheap; clearing them (rarely needed) is not, so only that waits
 * for a flag to have been raised. */
#ifndef NBODY_GPUNB_STOP_H
#define NBODY_GPUNB_STOP_H
#include <fenv.h>
#include <stdio.h>
#include <stdlib.h>

#define GPUNB_REPORTED_FLAGS (FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW)

#define GPUNB_CALL(expr)                                                                       \
    do {                                                                                       \
        int before_ = fetestexcept(GPUNB_REPORTED_FLAGS);                                      \
        int status_ = (expr);                                                                  \
        int raised_ = fetestexcept(GPUNB_REPORTED_FLAGS) & ~before_;                           \
        if (raised_) feclearexcept(raised_);                                                   \
        if (status_ != 0) {                                                                    \
            fputs("nbody gpunb: stopping the program (exit status 70) after the error above\n", \
                  stderr);                                                                     \
            exit(70);                                                                          \
        }                                                                                      \
    } while (0)
#endif
