/* edgenf's core.p4: the P4-16 core library, with the same declarations as
 * p4c's p4include/core.p4 (Apache-2.0 upstream; rewritten here). */
#ifndef _CORE_P4_
#define _CORE_P4_

error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

extern packet_in {
    void extract<T>(out T hdr);
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    T lookahead<T>();
    void advance(in bit<32> sizeInBits);
    bit<32> length();
}

extern packet_out {
    void emit<T>(in T hdr);
}

@noWarn("unused")
action NoAction() {}

match_kind {
    exact,
    ternary,
    lpm
}

extern void verify(in bool check, in error toSignal);

/* Compile-time assertions (P4-16 1.2.4): the program does not compile if
 * check is false. */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif  /* _CORE_P4_ */
