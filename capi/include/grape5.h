/* nbody's GRAPE-5 drop-in: the g5_* functions Phantom-GRAPE and Sapporo2 export, on
 * libnbody_c. C spellings take scalars by value; Fortran spellings (trailing underscore)
 * by reference. Double precision, G = 1, p = -sum m / sqrt(r^2 + eps^2) over every
 * j-particle (a j-particle at an i-position adds -m/eps, as on the board). Executor:
 * NBODY_GRAPE_EXECUTOR and NBODY_GRAPE_THREADS, as for grape6.h. */
#ifndef NBODY_GRAPE5_H
#define NBODY_GRAPE5_H
#ifdef __cplusplus
extern "C" {
#endif

void g5_open(void);
void g5_close(void);
int g5_get_number_of_pipelines(void);
void g5_set_n(int n);
void g5_set_eps_to_all(double eps);
void g5_set_range(double xmin, double xmax, double mmin);
void g5_set_xmj(int adr, int nj, const double xj[][3], const double mj[]);
void g5_calculate_force_on_x(const double x[][3], double a[][3], double p[], int ni);

void g5_open_(void);
void g5_close_(void);
int g5_get_number_of_pipelines_(void);
void g5_set_n_(const int *n);
void g5_set_eps_to_all_(const double *eps);
void g5_set_range_(const double *xmin, const double *xmax, const double *mmin);
void g5_set_xmj_(const int *adr, const int *nj, const double xj[][3], const double mj[]);
void g5_calculate_force_on_x_(const double x[][3], double a[][3], double p[], const int *ni);

#ifdef __cplusplus
}
#endif
#endif
