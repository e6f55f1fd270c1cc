// advise loops forever without yielding: only a worker thread can stop it.
export default {
  name: "Spinner",
  version: "1.0",
  advise() {
    for (;;) { /* spin */ }
  },
};
