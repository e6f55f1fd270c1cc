// advise throws.
export default {
  name: "Thrower",
  version: "1.0",
  advise() {
    throw new RangeError("budget exceeded");
  },
};
