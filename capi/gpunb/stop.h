/* What every Fortran name does around the library call. The names return nothing, so an
 * error the library reported (its message is on stderr) stops the program, as upstream's
 * asserts do, but through exit(): Fortran's units are flushed and the status says why.
 * The caller's floating-point exception flags are kept as they were: the kernels' masked
 * lanes (a zero distance's 1/r) would otherwise show up in gfortran's note at STOP. */
#ifndef NBODY_GPUNB_STOP_H
#define NBODY_GPUNB_STOP_H
#include <fenv.h>
#include <stdio.h>
#include <stdlib.h>

#define GPUNB_CALL(expr)                                                                       \
    do {                                                                                       \
        fexcept_t flags_;                                                                      \
        fegetexceptflag(&flags_, FE_ALL_EXCEPT);                                               \
        int status_ = (expr);                                                                  \
        fesetexceptflag(&flags_, FE_ALL_EXCEPT);                                               \
        if (status_ != 0) {                                                                    \
            fputs("nbody gpunb: stopping the program (exit status 70) after the error above\n", \
                  stderr);                                                                     \
            exit(70);                                                                          \
        }                                                                                      \
    } while (0)
#endif
