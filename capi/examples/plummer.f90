! Forces through the C ABI from Fortran 2003 (iso_c_binding), checked against a plain
! double loop. The library uses its records in place: double records must be 32-byte
! aligned, so the array comes from C's aligned_alloc and is viewed with c_f_pointer.
! Codes that keep one array per coordinate call the SoA entry point with plain arrays.
! Build: gfortran plummer.f90 $(pkg-config --libs nbody) -o plummer_f
program plummer_f
  use, intrinsic :: iso_c_binding
  implicit none

  type, bind(c) :: nbody_params
    real(c_double) :: g, eps
    integer(c_int32_t) :: potential, overlap
    integer(c_size_t) :: target_start, source_start, shared_len
    integer(c_int32_t) :: softening
  end type

  interface
    integer(c_int) function nbody_cpu_new(threads, out) bind(c)
      import :: c_int, c_int32_t, c_ptr
      integer(c_int32_t), value :: threads
      type(c_ptr) :: out
    end function
    integer(c_int) function nbody_accelerations_f64(e, t, nt, s, ns, params, out, nout) bind(c)
      import :: c_int, c_ptr, c_size_t, nbody_params
      type(c_ptr), value :: e, t, s, out
      integer(c_size_t), value :: nt, ns, nout
      type(nbody_params) :: params
    end function
    integer(c_int) function nbody_accelerations_soa_f64(e, nt, tx, ty, tz, tm, ns, sx, sy, sz, sm, params, &
                                                        ax, ay, az, phi) bind(c)
      import :: c_int, c_ptr, c_size_t, c_double, nbody_params
      type(c_ptr), value :: e
      integer(c_size_t), value :: nt, ns
      real(c_double), intent(in) :: tx(*), ty(*), tz(*), tm(*), sx(*), sy(*), sz(*), sm(*)
      type(nbody_params) :: params
      real(c_double), intent(inout) :: ax(*), ay(*), az(*), phi(*)
    end function
    type(c_ptr) function nbody_last_error() bind(c)
      import :: c_ptr
    end function
    subroutine nbody_executor_free(e) bind(c)
      import :: c_ptr
      type(c_ptr), value :: e
    end subroutine
    type(c_ptr) function aligned_alloc(alignment, bytes) bind(c)
      import :: c_ptr, c_size_t
      integer(c_size_t), value :: alignment, bytes
    end function
    subroutine free(p) bind(c)
      import :: c_ptr
      type(c_ptr), value :: p
    end subroutine
  end interface

  integer, parameter :: n = 1000
  real(c_double), parameter :: eps = 1.0d0 / 64.0d0
  type(c_ptr) :: exec, pp, po
  real(c_double), pointer :: p(:, :), out(:, :)
  type(nbody_params) :: prm
  real(c_double) :: a(3), d(3), r2, inv, worst, u(3), soa_diff
  real(c_double), allocatable :: x(:), y(:), z(:), m(:), ax(:), ay(:), az(:), phi(:)
  integer :: i, j, status
  integer(c_size_t) :: nn

  nn = n
  pp = aligned_alloc(32_c_size_t, 32_c_size_t * nn)
  po = aligned_alloc(32_c_size_t, 32_c_size_t * nn)
  call c_f_pointer(pp, p, [4, n])
  call c_f_pointer(po, out, [4, n])
  do i = 1, n
    call random_number(u)
    p(1:3, i) = 2.0d0 * u - 1.0d0
    p(4, i) = 1.0d0 / n
  end do
  out = 0.0d0

  status = nbody_cpu_new(1_c_int32_t, exec)
  if (status /= 0) stop 'nbody_cpu_new failed'
  prm = nbody_params(1.0d0, eps, 1, 1, 0, 0, 0, 0)   ! G, eps, potential, identical overlap, plummer
  status = nbody_accelerations_f64(exec, pp, nn, pp, nn, prm, po, nn)
  if (status /= 0) then
    call print_error()
    stop 1
  end if

  worst = 0.0d0
  do i = 1, n
    a = 0.0d0
    do j = 1, n
      if (j == i) cycle
      d = p(1:3, j) - p(1:3, i)
      r2 = sum(d * d) + eps * eps
      inv = 1.0d0 / sqrt(r2)
      a = a + p(4, j) * d * inv**3
    end do
    worst = max(worst, sqrt(sum((out(1:3, i) - a)**2) / sum(a * a)))
  end do
  print '(a, es10.3)', 'fortran: max relative acceleration error ', worst

  ! The same system as plain arrays, one per coordinate: the same forces, bit for bit.
  allocate(x(n), y(n), z(n), m(n), ax(n), ay(n), az(n), phi(n))
  x = p(1, :); y = p(2, :); z = p(3, :); m = p(4, :)
  ax = 0.0d0; ay = 0.0d0; az = 0.0d0; phi = 0.0d0
  status = nbody_accelerations_soa_f64(exec, nn, x, y, z, m, nn, x, y, z, m, prm, ax, ay, az, phi)
  if (status /= 0) then
    call print_error()
    stop 1
  end if
  soa_diff = maxval(abs(ax - out(1, :))) + maxval(abs(ay - out(2, :))) + maxval(abs(az - out(3, :))) &
           + maxval(abs(phi - out(4, :)))
  print '(a, es10.3)', 'fortran soa: max difference from the records ', soa_diff
  if (soa_diff /= 0.0d0) stop 'FAILED: SoA differs'

  ! A short output buffer is an error with a message, not a crash.
  status = nbody_accelerations_f64(exec, pp, nn, pp, nn, prm, po, nn - 1)
  if (status /= 3) stop 'a short buffer was not refused'
  call print_error()

  call nbody_executor_free(exec)
  call free(pp)
  call free(po)
  if (worst > 1.0d-12) stop 'FAILED'
  print '(a)', 'passed'

contains

  subroutine print_error()
    character(kind=c_char), pointer :: msg(:)
    integer :: k
    call c_f_pointer(nbody_last_error(), msg, [1000])
    k = 1
    do while (msg(k) /= c_null_char .and. k < 1000)
      k = k + 1
    end do
    print '(a, 1000a)', 'nbody: ', msg(1:k - 1)
  end subroutine

end program
