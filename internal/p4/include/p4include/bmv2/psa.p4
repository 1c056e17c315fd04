/* p4c's BMv2 flavour of PSA (#include "bmv2/psa.p4", used by p4c's
 * p4_16_samples) declares the same architecture as psa.p4: one file. */
#include <psa.p4>
