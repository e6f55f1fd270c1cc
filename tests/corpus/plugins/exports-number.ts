// A default export that is not a policy.
export default 42;
