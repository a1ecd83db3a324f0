/* nbody: NBODY6's regular-force library ("gpunb") over nbody's executors.
 *
 * libnbody_c exports one implementation under the names below; each code's own Fortran
 * names (which differ in signature from code to code) come from a small archive built
 * from capi/gpunb/<code>.c by scripts/build-gpunb.sh:
 *
 *   libnbody_gpunb_nbody6pp.a  NBODY6++GPU (Beijing): gpunb_devinit_, gpunb_open_(nbmax, irank),
 *                              gpunb_close_, gpunb_send_, gpunb_regf_(..., m_flag),
 *                              gpunb_profile_, gpupot_; 2048 i-particles a call.
 *   libnbody_gpunb_amuse.a     AMUSE's NBODY6++ (amuse-nbody6xx): as above without m_flag
 *                              and gpunb_profile_; 1024 i-particles a call.
 *   libnbody_gpunb_nbody6.a    NBODY6/GPU (Nitadori and Aarseth): gpunb_open_(nbmax), no irank,
 *                              the mass-scaled sphere, overflow written as -1.
 *   libnbody_irr_nbody6pp.a    NBODY6++GPU's irregular force on the CPU (irr.avx.cpp's names):
 *                              irr_simd_open_, irr_simd_set_jp_, irr_simd_set_list_,
 *                              irr_simd_firr_vec_, irr_simd_profile_, irr_simd_close_.
 *
 * Link a code with its archive and then libnbody_c (docs/embedding.md has each code's
 * Makefile line). The backend is NBODY_GPUNB_EXECUTOR (the command's --executor strings;
 * a GPU when unset and there is one, else the CPU), with NBODY_GPUNB_THREADS threads on
 * the CPU; f64 by default, mixed with a mixed backend, f32 with NBODY_GPUNB_PRECISION=f32.
 * Every function returns 0, or -1 after printing "nbody gpunb: ..." to stderr (also kept
 * for nbody_last_error); outputs are then untouched. The archives' void Fortran
 * functions stop the program with exit status 70 on such an error, as upstream's asserts
 * would, but with the message and after Fortran's units are flushed.
 */
#ifndef NBODY_GPUNB_H
#define NBODY_GPUNB_H

#ifdef __cplusplus
extern "C" {
#endif

/* flags of nbody_gpunb_regf */
#define NBODY_GPUNB_MASS_SCALED 1        /* neighbour when min(r2, r2 predicted) < m_j h2_i */
#define NBODY_GPUNB_OVERFLOW_MINUS_ONE 2 /* an overflowed count is -1, not -count */

/* Opens the backend and prints which one. */
int nbody_gpunb_devinit(int rank);
/* Room for nbmax j-particles (opening it when open is said and changes nothing). */
int nbody_gpunb_open(int nbmax);
int nbody_gpunb_close(void);
/* The j-particles every later call sums over (nj <= nbmax). */
int nbody_gpunb_send(int nj, const double m[], const double x[][3], const double v[][3]);
/* The regular force on ni <= nimax i-particles: j is a neighbour of i when
 * min(|dx|^2, |dx + dtr_i dv|^2) < h2_i (dtr NULL: |dx|^2 alone; flags may scale h2_i by
 * m_j), the particle itself included; neighbours are left out of acc, jrk and
 * pot = +sum m/r (pot may be NULL). list[i*lmax] is the count, then the j indices from 0,
 * increasing; a count above nnbmax or lmax - 1 is written as -count (or -1). */
int nbody_gpunb_regf(int nimax, int flags, int ni, const double h2[], const double dtr[],
                     const double xi[][3], const double vi[][3], double acc[][3], double jrk[][3],
                     double pot[], int lmax, int nnbmax, int *list);
/* gpupot: pot[k] = +sum m_j / r over the other particles (coincident ones left out) of
 * particle istart + k (counted from 1) among the n given. */
int nbody_gpunb_potential(int istart, int ni, int n, const double m[], const double x[][3],
                          double pot[]);
/* Calls, i-particles and seconds since the last print, on stderr. */
int nbody_gpunb_profile(int rank);

/* The irregular force ("irr_simd"), in f64, on NBODY_IRR_THREADS threads (1 by default; the
 * archive's irr_simd_firr_vec_ shares a block over the code's OpenMP threads instead).
 * set_jp and set_list of distinct particles may run on several threads at once, never
 * beside a force call. Errors print "nbody irr: ..." and return -1, outputs untouched. */
/* Particles 1..nmax, lists of at most lmax - 1 neighbours. */
int nbody_irr_open(int nmax, int lmax, int rank);
int nbody_irr_close(int rank);
/* Particle addr (from 1) at time t: position, velocity, a/2, j/6 and mass. */
int nbody_irr_set_jp(int addr, const double x[3], const double v[3], const double a2[3],
                     const double j6[3], double m, double t);
/* list[0] neighbours of addr follow in list[1..], each from 1. */
int nbody_irr_set_list(int addr, const int *list);
/* Every particle predicted to ti; acc = sum m dx/r^3 and jrk = sum m (dv - 3 (dx.dv) dx/r^2)/r^3
 * over the list of each addr[k] (from 1), unsoftened; nnbid[k] its nearest neighbour
 * (from 1, the lower at equal distance, 0 for an empty list). */
int nbody_irr_firr_vec(double ti, int ni, const int addr[], double acc[][3], double jrk[][3],
                       int nnbid[]);
/* As nbody_irr_firr_vec on the calling thread alone, callable from several threads at once
 * (shares that do not overlap): the archive's irr_simd_firr_vec_ runs a block on the
 * code's OpenMP threads this way; nbody_irr_called then counts the block in the profile. */
int nbody_irr_firr_part(double ti, int ni, const int addr[], double acc[][3], double jrk[][3],
                        int nnbid[]);
int nbody_irr_called(double seconds);
/* Calls, i-particles, neighbours and seconds since the last print, on stderr. */
int nbody_irr_profile(int rank);

#ifdef __cplusplus
}
#endif
#endif
