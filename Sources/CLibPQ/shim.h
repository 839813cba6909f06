#ifndef ROBOSCOPE_CLIBPQ_SHIM_H
#define ROBOSCOPE_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
