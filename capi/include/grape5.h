/* nbody's GRAPE-5 drop-in: the g5_* functions Phantom-GRAPE and Sapporo2 export, on
 * libnbody_c. C spellings take scalars by value; Fortran spellings (trailing underscore)
 * by reference. Double precision, G = 1, p = -sum m / sqrt(r^2 + eps^2) over every
 * j-particle (a j-particle at an i-position adds -m/eps, as on the board). Executor:
 * NBODY_GRAPE_EXECUTOR and NBODY_GRAPE_THREADS, as for grape6.h. No GRAPE-5 call carries a
 * softening per particle (one eps for every pair). */
#ifndef NBODY_GRAPE5_H
#define NBODY_GRAPE5_H
#ifdef __cplusplus
extern "C" {
#endif

void g5_open(void);
void g5_open_special(int ndev, const int list[]); /* on GPUs list[0..ndev); ndev <= 0: g5_open() */
void g5_close(void);
int g5_get_number_of_pipelines(void);
int g5_get_number_of_real_pipelines(void); /* no meaning on a GPU: g5_get_number_of_pipelines() */
int g5_get_jmemsize(void);                 /* bounded by memory only: INT_MAX */
int g5_get_pcibus_freq(void);              /* no meaning on a GPU: 1 */
void g5_set_n(int n);
void g5_set_eps_to_all(double eps);
void g5_set_eps2_to_all(double eps2);
void g5_set_range(double xmin, double xmax, double mmin); /* fixed-point range: accepted, no effect */
void g5_set_xmj(int adr, int nj, const double xj[][3], const double mj[]);
void g5_set_jp(int adr, int nj, const double mj[], const double xj[][3]);
void g5_calculate_force_on_x(const double x[][3], double a[][3], double p[], int ni);
/* The split call: at most g5_get_number_of_pipelines() positions, computed by g5_run
 * (or by g5_get_force when g5_run was skipped). */
void g5_set_xi(int ni, const double xi[][3]);
void g5_run(void);
void g5_get_force(int ni, double a[][3], double p[]);

void g5_open_(void);
void g5_open_special_(const int *ndev, const int list[]);
void g5_close_(void);
int g5_get_number_of_pipelines_(void);
int g5_get_number_of_real_pipelines_(void);
int g5_get_jmemsize_(void);
int g5_get_pcibus_freq_(void);
void g5_set_n_(const int *n);
void g5_set_eps_to_all_(const double *eps);
void g5_set_eps2_to_all_(const double *eps2);
void g5_set_range_(const double *xmin, const double *xmax, const double *mmin);
void g5_set_xmj_(const int *adr, const int *nj, const double xj[][3], const double mj[]);
void g5_set_jp_(const int *adr, const int *nj, const double mj[], const double xj[][3]);
void g5_calculate_force_on_x_(const double x[][3], double a[][3], double p[], const int *ni);
void g5_set_xi_(const int *ni, const double xi[][3]);
void g5_run_(void);
void g5_get_force_(const int *ni, double a[][3], double p[]);

#ifdef __cplusplus
}
#endif
#endif
