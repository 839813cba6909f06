#ifndef ROBOSCOPE_CZLIB_SHIM_H
#define ROBOSCOPE_CZLIB_SHIM_H
#include <zlib.h>
#endif
