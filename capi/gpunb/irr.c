/* NBODY6++GPU's irregular-force names (nbody6ppgpu/Nbody6PPGPU-beijing, src/Main/irr.avx.cpp
 * and irr.sse.cpp) over libnbody_c: link libnbody_irr_nbody6pp.a, then libnbody_c.
 * Built with OpenMP (as NBODY6++ is), a block runs on the code's own OpenMP threads, as
 * upstream's does: each takes a share through nbody_irr_firr_part. A second team of
 * threads would wait for cores that the code's spinning OpenMP threads hold. */
#include "gpunb.h"
#include "stop.h"
#ifdef _OPENMP
#include <omp.h>
#endif

void irr_simd_open_(int *nmax, int *lmax, int *rank) { GPUNB_CALL(nbody_irr_open(*nmax, *lmax, *rank)); }
void irr_simd_close_(int *rank) { GPUNB_CALL(nbody_irr_close(*rank)); }
void irr_simd_profile_(int *rank) { GPUNB_CALL(nbody_irr_profile(*rank)); }
void irr_simd_set_jp_(int *addr, double pos[3], double vel[3], double acc2[3], double jrk6[3], double *mass,
                      double *time) {
    GPUNB_CALL(nbody_irr_set_jp(*addr, pos, vel, acc2, jrk6, *mass, *time));
}
void irr_simd_set_list_(int *addr, int *nblist) { GPUNB_CALL(nbody_irr_set_list(*addr, nblist)); }
void irr_simd_firr_vec_(double *ti, int *ni, int addr[], double acc[][3], double jrk[][3], int nnbid[]) {
#ifdef _OPENMP
    /* Below this many targets a block is not worth the threads' handshake. */
    if (*ni >= 16 && omp_get_max_threads() > 1 && !omp_in_parallel()) {
        double start = omp_get_wtime();
        int failed = 0;
#pragma omp parallel reduction(| : failed)
        {
            long k = omp_get_num_threads(), t = omp_get_thread_num();
            int a = (int)(*ni * t / k), b = (int)(*ni * (t + 1) / k);
            failed |= nbody_irr_firr_part(*ti, b - a, addr + a, acc + a, jrk + a, nnbid + a) != 0;
        }
        GPUNB_CALL(failed ? -1 : nbody_irr_called(omp_get_wtime() - start));
        return;
    }
#endif
    GPUNB_CALL(nbody_irr_firr_vec(*ti, *ni, addr, acc, jrk, nnbid));
}
