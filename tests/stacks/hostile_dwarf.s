/* A compile unit that imports itself, twice (DW_TAG_imported_unit with
 * DW_AT_import naming its own DIE), beside one function "victim" at
 * [0x1000, 0x1020). A DIE walk that follows imports without remembering
 * them does 2^depth work here. Plain constants only (no relocations), so
 * libdw reads the object file as it is. DWARF 4. */
	.section .debug_abbrev,"",@progbits
	.uleb128 1		/* the unit */
	.uleb128 0x11		/* DW_TAG_compile_unit */
	.byte 1			/* children */
	.uleb128 0x03, 0x08	/* DW_AT_name, DW_FORM_string */
	.uleb128 0x11, 0x01	/* DW_AT_low_pc, DW_FORM_addr */
	.uleb128 0x12, 0x07	/* DW_AT_high_pc, DW_FORM_data8 (a length) */
	.byte 0, 0
	.uleb128 2		/* the import */
	.uleb128 0x3d		/* DW_TAG_imported_unit */
	.byte 0
	.uleb128 0x18, 0x13	/* DW_AT_import, DW_FORM_ref4 */
	.byte 0, 0
	.uleb128 3		/* the function */
	.uleb128 0x2e		/* DW_TAG_subprogram */
	.byte 0
	.uleb128 0x03, 0x08
	.uleb128 0x11, 0x01
	.uleb128 0x12, 0x07
	.byte 0, 0
	.byte 0

	.section .debug_info,"",@progbits
.Lcu:
	.long .Lcu_end - .Lcu_start
.Lcu_start:
	.short 4		/* version */
	.long 0			/* abbreviations at the start of .debug_abbrev */
	.byte 8			/* address size */
.Lunit:
	.uleb128 1
	.string "hostile.c"
	.quad 0x1000
	.quad 0x100
	.uleb128 2
	.long .Lunit - .Lcu	/* itself */
	.uleb128 2
	.long .Lunit - .Lcu	/* and again */
	.uleb128 3
	.string "victim"
	.quad 0x1000
	.quad 0x20
	.byte 0			/* end of the unit's children */
.Lcu_end:
	.section .note.GNU-stack,"",@progbits
