package main

// nothing to see
