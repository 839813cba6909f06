#ifndef ROBOSCOPE_CHIREDIS_SHIM_H
#define ROBOSCOPE_CHIREDIS_SHIM_H
// Swift cannot call the variadic redisCommand; the adapter uses redisCommandArgv.
#include <hiredis/hiredis.h>
#endif
